"""Registry is the set of kinds a FakeClient serves, each with its apiserver strategy's options.

A ``FakeKind`` says what discovery says about a kind (plural, scope, status and scale
subresources, short names, selectable fields) and how the apiserver treats its objects (generation,
custom resource, name rules). ``BUILTIN_KINDS`` are the common built-in kinds every fake serves;
``crd_kinds`` reads more from CustomResourceDefinitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from reconcile.errors import NoKindMatch
from reconcile.gvk import GVK, Resource
from testenv.crds import load_crds

__all__ = [
    "BUILTIN_KINDS",
    "FakeKind",
    "GroupKind",
    "NameRule",
    "Registry",
    "ScalePaths",
    "VERBS",
    "crd_kinds",
    "crd_manifests",
]

VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

NameRule = Literal["subdomain", "label", "path"]
GroupKind = tuple[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScalePaths:
    """Where a kind's scale subresource reads and writes (a CRD's ``subresources.scale``)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = None
    """A string selector, or a LabelSelector object (built-in workloads' ``.spec.selector``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeKind:
    """How the fake serves one kind: what discovery and the kind's apiserver strategy say."""

    gvk: GVK
    plural: str
    namespaced: bool = True
    status: bool = False
    """Has the status subresource: writes of the object keep the stored status."""
    scale: ScalePaths | None = None
    generation: bool = False
    """Keeps metadata.generation, bumped when anything but metadata (and status) changes."""
    custom: bool = False
    """A custom resource: no strategic merge patch, and updates need a resourceVersion."""
    short_names: tuple[str, ...] = ()
    field_labels: tuple[str, ...] = ()
    """Field selectors served besides metadata.name and metadata.namespace."""
    names: NameRule = "subdomain"

    @property
    def group_kind(self) -> GroupKind:
        """Storage is per group and kind: every version of a kind shares its objects."""
        return (self.gvk.group, self.gvk.kind)

    @property
    def qualified(self) -> str:
        """``plural.group``, as the apiserver names the resource in messages."""
        return f"{self.plural}.{self.gvk.group}" if self.gvk.group else self.plural

    @property
    def resource(self) -> Resource:
        """The ``Resource`` the REST mapper would report."""
        subresources = {"status"} if self.status else set()
        if self.scale is not None:
            subresources.add("scale")
        return Resource(
            self.gvk, self.plural, self.namespaced, frozenset(subresources), frozenset(VERBS)
        )


def _builtin(api_version: str, kind: str, plural: str, **options: Any) -> FakeKind:
    return FakeKind(gvk=GVK.from_api_version(api_version, kind), plural=plural, **options)


_WORKLOAD_SCALE: Final = ScalePaths(label_selector=".spec.selector")
_RBAC = "rbac.authorization.k8s.io/v1"

BUILTIN_KINDS: Final[tuple[FakeKind, ...]] = (
    _builtin("v1", "ConfigMap", "configmaps", short_names=("cm",)),
    _builtin("v1", "Secret", "secrets", field_labels=("type",)),
    _builtin(
        "v1",
        "Namespace",
        "namespaces",
        namespaced=False,
        status=True,
        short_names=("ns",),
        field_labels=("status.phase",),
        names="label",
    ),
    _builtin(
        "v1",
        "Pod",
        "pods",
        status=True,
        generation=True,
        short_names=("po",),
        field_labels=(
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ),
    ),
    _builtin("v1", "Service", "services", status=True, short_names=("svc",), names="label"),
    _builtin("v1", "ServiceAccount", "serviceaccounts", short_names=("sa",)),
    _builtin(
        "v1",
        "Event",
        "events",
        short_names=("ev",),
        field_labels=(
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "type",
        ),
    ),
    _builtin(
        "v1",
        "Node",
        "nodes",
        namespaced=False,
        status=True,
        short_names=("no",),
        field_labels=("spec.unschedulable",),
    ),
    _builtin(
        "apps/v1",
        "Deployment",
        "deployments",
        status=True,
        scale=_WORKLOAD_SCALE,
        generation=True,
        short_names=("deploy",),
    ),
    _builtin(
        "apps/v1",
        "ReplicaSet",
        "replicasets",
        status=True,
        scale=_WORKLOAD_SCALE,
        generation=True,
        short_names=("rs",),
        field_labels=("status.replicas",),
    ),
    _builtin(
        "apps/v1",
        "StatefulSet",
        "statefulsets",
        status=True,
        scale=_WORKLOAD_SCALE,
        generation=True,
        short_names=("sts",),
    ),
    _builtin(
        "apps/v1", "DaemonSet", "daemonsets", status=True, generation=True, short_names=("ds",)
    ),
    _builtin("coordination.k8s.io/v1", "Lease", "leases"),
    _builtin(_RBAC, "Role", "roles", names="path"),
    _builtin(_RBAC, "RoleBinding", "rolebindings", names="path"),
    _builtin(_RBAC, "ClusterRole", "clusterroles", namespaced=False, names="path"),
    _builtin(_RBAC, "ClusterRoleBinding", "clusterrolebindings", namespaced=False, names="path"),
    _builtin(
        "batch/v1",
        "Job",
        "jobs",
        status=True,
        generation=True,
        field_labels=("status.successful",),
    ),
    _builtin("batch/v1", "CronJob", "cronjobs", status=True, generation=True, short_names=("cj",)),
)
"""The kinds every FakeClient serves: core, apps, batch, coordination and RBAC."""


def crd_kinds(crd: Mapping[str, Any]) -> Iterator[FakeKind]:
    """One FakeKind per served version of a CustomResourceDefinition (v1, or v1beta1's layout)."""
    spec = crd["spec"]
    names = spec["names"]
    versions = spec.get("versions") or [{"name": spec["version"]}]
    for version in versions:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or spec.get("subresources") or {}
        scale = subresources.get("scale")
        paths = None
        if scale is not None:
            paths = ScalePaths(
                spec_replicas=scale.get("specReplicasPath", ".spec.replicas"),
                status_replicas=scale.get("statusReplicasPath", ".status.replicas"),
                label_selector=scale.get("labelSelectorPath"),
            )
        selectable = version.get("selectableFields") or ()
        yield FakeKind(
            gvk=GVK(spec["group"], version["name"], names["kind"]),
            plural=names["plural"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            status="status" in subresources,
            scale=paths,
            generation=True,
            custom=True,
            short_names=tuple(names.get("shortNames") or ()),
            field_labels=tuple(str(f["jsonPath"]).lstrip(".") for f in selectable),
        )


def crd_manifests(crds: Iterable[Mapping[str, Any] | Path | str]) -> list[Mapping[str, Any]]:
    """CustomResourceDefinitions given as dicts, or as files and directories of them.

    Raises:
        ValueError: a dict is not a CustomResourceDefinition, or a file does not parse.
        FileNotFoundError: a path does not exist.
    """
    manifests: list[Mapping[str, Any]] = []
    paths: list[Path | str] = []
    for crd in crds:
        if isinstance(crd, Mapping):
            if crd.get("kind") != "CustomResourceDefinition":
                raise ValueError(f"not a CustomResourceDefinition: kind {crd.get('kind')!r}")
            manifests.append(crd)
        else:
            paths.append(crd)
    manifests += load_crds(paths)
    return manifests


class Registry:
    """The kinds one fake serves, by GVK, in the order they were first registered."""

    def __init__(self) -> None:
        self._kinds: dict[GVK, FakeKind] = {}

    def __iter__(self) -> Iterator[FakeKind]:
        return iter(self._kinds.values())

    def add(self, kind: FakeKind) -> None:
        """Serve ``kind``, replacing what was registered for its GVK."""
        self._kinds[kind.gvk] = kind

    def kind(self, gvk: GVK) -> FakeKind:
        """How ``gvk`` is served.

        Raises:
            NoKindMatch: the kind is not registered.
        """
        kind = self._kinds.get(gvk)
        if kind is None:
            raise NoKindMatch(f"no resource is served for {gvk}")
        return kind
