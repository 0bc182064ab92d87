"""Rbac is the host access each controller declares it needs, and what a set of manifests grants.

Built on the framework's ``reconcile.rbac`` (``Rule``, ``cache``, ``Grant``, ``granted``, ...,
re-exported here); what is Karmada's: resource templates, the manager's Lease and ServiceAccount,
and the catalog of controllers. Every controller's module (``controllers.catalog`` lists them)
declares ``PERMISSIONS`` beside its ``setup``: the API requests its code makes on the host
cluster, as ``Rule``s (cache reads are ``list`` + ``watch``, written ``cache(group, *resources)``,
live reads ``get``, then the verbs it writes with, status subresources, a namespace for what only a
Role grants), plus the verbs it uses on resource templates (``Permissions.templates``, and on their
status for the kinds whose status it aggregates), which apply to whichever kinds the host lets it
propagate. ``MANAGER`` holds what the framework itself needs (``manager_permissions``: Events, the
leader Lease, the metrics server's reviews).
``required(controllers)`` gathers the declarations as ``Grant``s; ``granted(manifests, account)``
computes, from RBAC manifests, what a ServiceAccount may do (aggregated ClusterRoles filled as
kube-controller-manager fills them) — the unit tests compare the two for
deploy/controller-manager/rbac.yaml, so the shipped role is exactly what the code uses.

Templates: the shipped role lets the controller-manager propagate ``DEFAULT_TEMPLATE_KINDS``; the
detector watches a kind only if the apiserver allows it (``template_verbs``), so more kinds are
added by binding more rules (an aggregated ClusterRole, see docs/operations.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controllers.api import KARMADA_SYSTEM_NAMESPACE
from controllers.catalog import CONTROLLER_MODULES
from controllers.interpreter.native_status import AGGREGATE
from reconcile import rbac
from reconcile.rbac import Grant, Rule, aggregated_rules, cache, manager_permissions, problems

__all__ = [
    "AGGREGATE_LABEL",
    "DEFAULT_TEMPLATE_KINDS",
    "LEASE_NAME",
    "MANAGER",
    "SERVICE_ACCOUNT",
    "Grant",
    "Permissions",
    "Rule",
    "TemplateKind",
    "aggregated_rules",
    "cache",
    "declared",
    "granted",
    "problems",
    "required",
    "template_grants",
    "template_verbs",
]

AGGREGATE_LABEL: Final = "reconcile.io/aggregate-to-controller-manager"
"""ClusterRoles with this label set to "true" add to what the controller-manager may do."""
SERVICE_ACCOUNT: Final = (KARMADA_SYSTEM_NAMESPACE, "reconcile-controller-manager")
"""The controller-manager's ServiceAccount in deploy/ (namespace, name)."""
LEASE_NAME: Final = "reconcile-controller-manager"
"""The leader-election Lease of ``reconcile controller-manager --leader-elect``."""


@dataclass(frozen=True)
class Permissions(rbac.Permissions):
    """What one controller does on the host: the framework's fixed rules, and verbs on resource
    templates (which kinds those are is the host's choice, see ``template_grants``)."""

    templates: tuple[str, ...] = ()
    """Verbs on every template kind it propagates (e.g. the detector's list, watch, patch)."""
    template_status: tuple[str, ...] = ()
    """Verbs on ``<kind>/status`` of the template kinds whose status is aggregated natively."""


@dataclass(frozen=True)
class TemplateKind:
    """A resource templates come in: API group, plural and kind."""

    group: str
    plural: str
    kind: str

    @property
    def aggregated(self) -> bool:
        """Whether the native interpreter aggregates member status onto it (any version)."""
        return any(g.group == self.group and g.kind == self.kind for g in AGGREGATE)


DEFAULT_TEMPLATE_KINDS: Final = (
    TemplateKind("apps", "deployments", "Deployment"),
    TemplateKind("apps", "statefulsets", "StatefulSet"),
    TemplateKind("apps", "daemonsets", "DaemonSet"),
    TemplateKind("apps", "replicasets", "ReplicaSet"),
    TemplateKind("batch", "jobs", "Job"),
    TemplateKind("batch", "cronjobs", "CronJob"),
    TemplateKind("", "configmaps", "ConfigMap"),
    TemplateKind("", "services", "Service"),
    TemplateKind("", "serviceaccounts", "ServiceAccount"),
    TemplateKind("", "persistentvolumeclaims", "PersistentVolumeClaim"),
    TemplateKind("", "persistentvolumes", "PersistentVolume"),
    TemplateKind("", "pods", "Pod"),
    TemplateKind("", "namespaces", "Namespace"),
    TemplateKind("", "limitranges", "LimitRange"),
    TemplateKind("", "resourcequotas", "ResourceQuota"),
    TemplateKind("networking.k8s.io", "ingresses", "Ingress"),
    TemplateKind("networking.k8s.io", "ingressclasses", "IngressClass"),
    TemplateKind("networking.k8s.io", "networkpolicies", "NetworkPolicy"),
    TemplateKind("policy", "poddisruptionbudgets", "PodDisruptionBudget"),
    TemplateKind("autoscaling", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
)
"""What Karmada users propagate most; not Secrets, RBAC, webhooks or CRDs (see the docs)."""

MANAGER: Final = Permissions(
    rules=manager_permissions(lease_name=LEASE_NAME, lease_namespace=KARMADA_SYSTEM_NAMESPACE).rules
)
"""What the manager needs whichever controllers run (deploy/ runs it with --leader-elect)."""

_DECLARATIONS: Final[Mapping[str, str]] = {**CONTROLLER_MODULES, "sharding": "controllers.sharding"}
# The modules the controller-manager sets up (controllers.catalog), and "sharding", what --shards
# adds; each has PERMISSIONS, imported on use, as there.


def declared(controllers: Iterable[str] | None = None) -> dict[str, Permissions]:
    """Each named controller's declared permissions (default: all), and the manager's.

    Raises:
        ValueError: an unknown controller name.
    """
    found = {"manager": MANAGER}
    for name in list(controllers or _DECLARATIONS):
        if name not in _DECLARATIONS:
            raise ValueError(f"unknown controller {name!r} (known: {', '.join(_DECLARATIONS)})")
        found[name] = importlib.import_module(_DECLARATIONS[name]).PERMISSIONS
    return found


def template_verbs(controllers: Iterable[str] | None = None) -> tuple[str, ...]:
    """The verbs the controllers use on every template kind: what the detector checks before
    watching a kind (sorted)."""
    verbs = {verb for p in declared(controllers).values() for verb in p.templates}
    return tuple(sorted(verbs))


def template_grants(
    kinds: Iterable[TemplateKind], permissions: Iterable[Permissions]
) -> set[Grant]:
    """What ``permissions`` need on templates of ``kinds`` (status only where aggregated)."""
    chosen = list(permissions)
    verbs = {verb for p in chosen for verb in p.templates}
    status_verbs = {verb for p in chosen for verb in p.template_status}
    grants = set()
    for kind in kinds:
        grants |= {Grant("", kind.group, kind.plural, verb) for verb in verbs}
        if kind.aggregated:
            grants |= {Grant("", kind.group, f"{kind.plural}/status", v) for v in status_verbs}
    return grants


def required(
    controllers: Iterable[str] | None = None,
    kinds: Iterable[TemplateKind] = DEFAULT_TEMPLATE_KINDS,
) -> set[Grant]:
    """Everything the controllers (default: all) and the manager need, templates of ``kinds``
    included."""
    permissions = list(declared(controllers).values())
    grants = {grant for p in permissions for rule in p.rules for grant in rule.grants()}
    return grants | template_grants(kinds, permissions)


def granted(
    manifests: Iterable[Mapping[str, Any]], account: tuple[str, str] = SERVICE_ACCOUNT
) -> set[Grant]:
    """What ``account`` (default: the controller-manager's) may do by ``manifests``
    (``reconcile.rbac.granted``)."""
    return rbac.granted(manifests, account)
