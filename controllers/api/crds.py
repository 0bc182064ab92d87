"""Crds locates the CustomResourceDefinitions of the Karmada API that the project ships.

``deploy/crds`` holds one apiextensions.k8s.io/v1 CRD file per kind; installing them into a
kube-apiserver (``kubectl apply -f deploy/crds`` or testenv's ``install_crds(crd_paths())``) makes
it serve every kind in ``KARMADA_RESOURCES``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from controllers.api.apps import WORKLOAD_REBALANCERS
from controllers.api.cluster import CLUSTERS
from controllers.api.config import (
    RESOURCE_INTERPRETER_CUSTOMIZATIONS,
    RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATIONS,
)
from controllers.api.policy import (
    CLUSTER_OVERRIDE_POLICIES,
    CLUSTER_PROPAGATION_POLICIES,
    OVERRIDE_POLICIES,
    PROPAGATION_POLICIES,
)
from controllers.api.taintpolicy import CLUSTER_TAINT_POLICIES
from controllers.api.work import CLUSTER_RESOURCE_BINDINGS, RESOURCE_BINDINGS, WORKS
from reconcile import Resource

__all__ = ["CRD_DIRECTORY", "KARMADA_RESOURCES", "crd_paths"]

_INSTALLED: Final = Path(__file__).resolve().parent / "crds"
_CHECKOUT: Final = Path(__file__).resolve().parents[2] / "deploy" / "crds"
# A wheel carries the CRDs in the package (setup.py copies them); a checkout has deploy/crds.
CRD_DIRECTORY: Final = _INSTALLED if _INSTALLED.is_dir() else _CHECKOUT

KARMADA_RESOURCES: Final[tuple[Resource, ...]] = (
    PROPAGATION_POLICIES,
    CLUSTER_PROPAGATION_POLICIES,
    OVERRIDE_POLICIES,
    CLUSTER_OVERRIDE_POLICIES,
    RESOURCE_BINDINGS,
    CLUSTER_RESOURCE_BINDINGS,
    WORKS,
    CLUSTERS,
    RESOURCE_INTERPRETER_CUSTOMIZATIONS,
    RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATIONS,
    WORKLOAD_REBALANCERS,
    CLUSTER_TAINT_POLICIES,
)


def crd_paths() -> list[Path]:
    """The CRD files, one per kind, sorted by name: ``deploy/crds`` of a checkout, or the copy
    an installed wheel carries in ``controllers/api/crds``.

    Raises:
        FileNotFoundError: neither is there, or it is empty.
    """
    paths = sorted(CRD_DIRECTORY.glob("*.yaml")) if CRD_DIRECTORY.is_dir() else []
    if not paths:
        raise FileNotFoundError(f"no Karmada CRD files in {CRD_DIRECTORY}")
    return paths
