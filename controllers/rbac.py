"""Rbac is the host access each controller declares it needs, and what a set of manifests grants.

Every controller's module (``controllers.catalog`` lists them) declares ``PERMISSIONS`` beside its
``setup``: the API requests its code makes on the host cluster, as ``Rule``s (cache reads are
``list`` + ``watch``, written ``cache(group, *resources)``, live reads ``get``, then the verbs it
writes with, status subresources, a namespace for what only a Role grants), plus the verbs it uses
on resource templates (``Permissions.templates``, and on their status for the kinds whose status
it aggregates), which apply to whichever kinds the host lets it propagate. ``MANAGER`` holds what
the framework itself needs (Events, the leader Lease, the metrics server's reviews).
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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from controllers.api import KARMADA_SYSTEM_NAMESPACE
from controllers.catalog import CONTROLLER_MODULES
from controllers.interpreter.native_status import AGGREGATE
from reconcile import selector_from_label_selector

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


class Grant(NamedTuple):
    """One verb on one resource (or subresource, ``deployments/status``), in one namespace
    (``""``: every namespace, as a ClusterRole grants), optionally of one object name only."""

    namespace: str
    group: str
    resource: str
    verb: str
    name: str = ""

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        named = f" named {self.name}" if self.name else ""
        group = self.group or "core"
        return f"{self.verb} {self.resource}.{group}{named}{where}"


@dataclass(frozen=True)
class Rule:
    """Verbs on resources of API groups, and why the code needs them (one line)."""

    groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    namespace: str = ""
    """Only in this namespace (a Role); "" for every namespace (a ClusterRole)."""
    names: tuple[str, ...] = ()
    """Only these objects (resourceNames); () for all."""

    def grants(self) -> Iterator[Grant]:
        """Every (namespace, group, resource, verb, name) the rule stands for."""
        for group in self.groups:
            for resource in self.resources:
                for verb in self.verbs:
                    for name in self.names or ("",):
                        yield Grant(self.namespace, group, resource, verb, name)


def cache(group: str, *resources: str, why: str = "its cache") -> Rule:
    """What an informer on ``resources`` of API ``group`` needs: ``list`` and ``watch`` (every
    controller's cached reads, so written once here)."""
    return Rule((group,), resources, ("list", "watch"), why)


@dataclass(frozen=True)
class Permissions:
    """What one controller does on the host: fixed rules, and verbs on resource templates."""

    rules: tuple[Rule, ...] = ()
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
    rules=(
        Rule(("",), ("events",), ("create", "patch"), "EventRecorder: create, then count repeats"),
        Rule(
            ("coordination.k8s.io",),
            ("leases",),
            ("create",),
            "leader election: the Lease, the first time",
            namespace=KARMADA_SYSTEM_NAMESPACE,
        ),
        Rule(
            ("coordination.k8s.io",),
            ("leases",),
            ("get", "update"),
            "leader election: acquire, renew, release",
            namespace=KARMADA_SYSTEM_NAMESPACE,
            names=(LEASE_NAME,),
        ),
        Rule(
            ("authentication.k8s.io",),
            ("tokenreviews",),
            ("create",),
            "metrics server: who is the scraper (TokenReview)",
        ),
        Rule(
            ("authorization.k8s.io",),
            ("subjectaccessreviews",),
            ("create",),
            "metrics server: may the scraper get /metrics (SubjectAccessReview)",
        ),
    )
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


# --- what manifests grant -----------------------------------------------------------------------


@dataclass
class _Roles:
    cluster_roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    roles: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    bindings: list[dict[str, Any]] = field(default_factory=list)


def _sorted(manifests: Iterable[Mapping[str, Any]]) -> _Roles:
    found = _Roles()
    for manifest in manifests:
        kind, meta = manifest.get("kind"), manifest.get("metadata") or {}
        if kind == "ClusterRole":
            found.cluster_roles[str(meta.get("name"))] = dict(manifest)
        elif kind == "Role":
            found.roles[(str(meta.get("namespace")), str(meta.get("name")))] = dict(manifest)
        elif kind in ("ClusterRoleBinding", "RoleBinding"):
            found.bindings.append(dict(manifest))
    return found


def aggregated_rules(
    role: Mapping[str, Any], cluster_roles: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The rules kube-controller-manager's clusterrole-aggregation controller gives ``role``: those
    of every other ClusterRole matching one of its ``aggregationRule.clusterRoleSelectors``; the
    role's own rules when it has no aggregationRule."""
    selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors")
    if selectors is None:
        return list(role.get("rules") or [])
    name = (role.get("metadata") or {}).get("name")
    rules: list[dict[str, Any]] = []
    matchers = [selector_from_label_selector(s) for s in selectors]
    for other in sorted(cluster_roles, key=lambda r: str((r.get("metadata") or {}).get("name"))):
        if (other.get("metadata") or {}).get("name") == name:
            continue
        if any(m.matches_object(other) for m in matchers):
            rules += [r for r in other.get("rules") or [] if r not in rules]
    return rules


def _binds(binding: Mapping[str, Any], account: tuple[str, str]) -> bool:
    namespace, name = account
    return any(
        s.get("kind") == "ServiceAccount"
        and s.get("name") == name
        and s.get("namespace") == namespace
        for s in binding.get("subjects") or []
    )


def _rule_grants(rule: Mapping[str, Any], namespace: str) -> Iterator[Grant]:
    for url in rule.get("nonResourceURLs") or []:
        for verb in rule.get("verbs") or []:
            yield Grant(namespace, "", str(url), str(verb))
    for group in rule.get("apiGroups") or []:
        for resource in rule.get("resources") or []:
            for verb in rule.get("verbs") or []:
                for name in rule.get("resourceNames") or [""]:
                    yield Grant(namespace, str(group), str(resource), str(verb), str(name))


def granted(
    manifests: Iterable[Mapping[str, Any]], account: tuple[str, str] = SERVICE_ACCOUNT
) -> set[Grant]:
    """What the ServiceAccount ``account`` (namespace, name) may do by the RBAC objects among
    ``manifests`` (other kinds ignored). Wildcards stay as they are written (``*``)."""
    roles = _sorted(manifests)
    everything = list(roles.cluster_roles.values())
    grants: set[Grant] = set()
    for binding in roles.bindings:
        if not _binds(binding, account):
            continue
        namespace = str((binding.get("metadata") or {}).get("namespace") or "")
        if binding.get("kind") == "ClusterRoleBinding":
            namespace = ""
        reference = binding.get("roleRef") or {}
        if reference.get("kind") == "ClusterRole":
            role = roles.cluster_roles.get(str(reference.get("name")))
        else:
            role = roles.roles.get((namespace, str(reference.get("name"))))
        for rule in aggregated_rules(role, everything) if role else []:
            grants.update(_rule_grants(rule, namespace))
    return grants


def problems(grants: Iterable[Grant]) -> list[str]:
    """What least privilege forbids in ``grants``: wildcards, Secrets beyond one namespace,
    proxy subresources (each a sentence)."""
    found = []
    for grant in sorted(grants):
        if "*" in (grant.group, grant.resource, grant.verb) or "*" in grant.resource:
            found.append(f"wildcard: {grant}")
        if grant.resource == "secrets" and not grant.namespace:
            found.append(f"Secrets in every namespace: {grant}")
        if grant.resource.endswith("/proxy"):
            found.append(f"proxy subresource: {grant}")
    return found
