"""Rbac is the access a controller declares it needs, and the RBAC manifests that grant it.

It plays the role of controller-gen's ``+kubebuilder:rbac`` markers. A controller's module declares,
next to its ``setup``, a module-level ``PERMISSIONS``: the API requests its code makes, as
``Rule``s, each with a one-line reason::

    from reconcile.rbac import Permissions, Rule, cache

    PERMISSIONS = Permissions(rules=(
        cache("example.com", "copies"),                 # the informer behind for_(): list, watch
        Rule(("example.com",), ("copies/status",), ("patch",), "write status conditions"),
        Rule(("",), ("configmaps",), ("create", "patch", "delete"), "the copies it makes"),
        Rule(("",), ("events",), ("create", "patch"), "its EventRecorder"),
    ))

    def setup(manager: Manager) -> None: ...

``reconcile gen rbac mymodule --role-name manager-role --output config/rbac`` then writes the
ClusterRole for every rule without a namespace and one Role per namespace a rule names (the
namespace ``OWN_NAMESPACE`` is the one given with ``--namespace``, where the controller runs);
``role_manifests`` is the same as a function. As controller-gen does, rules are merged (one
rule per API group, resource names and verbs, listing every resource that has them) and sorted,
so the output does not change unless the declarations do. ``manager_permissions`` is what the
Manager itself needs (Events, leader election, the metrics server's reviews).

``granted(manifests, account)`` answers the other way round: what a ServiceAccount may do by
a set of RBAC manifests (aggregated ClusterRoles filled as kube-controller-manager fills them),
so a test can compare it with ``Permissions.grants()``; ``problems`` lists what least privilege
forbids in a set of grants.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Final, NamedTuple

from reconcile.labels import selector_from_label_selector

__all__ = [
    "OWN_NAMESPACE",
    "RBAC_API_VERSION",
    "Grant",
    "Permissions",
    "Rule",
    "aggregated_rules",
    "cache",
    "granted",
    "manager_permissions",
    "permissions_of",
    "policy_rules",
    "problems",
    "role_manifests",
]

RBAC_API_VERSION: Final = "rbac.authorization.k8s.io/v1"
OWN_NAMESPACE: Final = "@own"
"""A rule's namespace meaning "where the controller runs", chosen when the roles are written."""


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
    cached read: the kinds of ``for_``, ``owns``, ``watches`` and of ``client.get/list``)."""
    return Rule((group,), resources, ("list", "watch"), why)


@dataclass(frozen=True)
class Permissions:
    """What one controller does on the API: its rules (declare as a module's ``PERMISSIONS``)."""

    rules: tuple[Rule, ...] = ()

    def grants(self) -> set[Grant]:
        """Every grant of every rule."""
        return {grant for rule in self.rules for grant in rule.grants()}

    def __add__(self, other: Permissions) -> Permissions:
        """The rules of both (for a module that adds to ``manager_permissions()``)."""
        return Permissions(rules=self.rules + other.rules)


def manager_permissions(
    *,
    lease_name: str | None = None,
    lease_namespace: str = OWN_NAMESPACE,
    metrics_auth: bool = True,
) -> Permissions:
    """What the Manager needs whichever controllers run: Events for its EventRecorders; with a
    ``lease_name``, leader election on that Lease; with ``metrics_auth``, the TokenReviews and
    SubjectAccessReviews of a metrics server that authenticates its scrapers."""
    rules = [Rule(("",), ("events",), ("create", "patch"), "EventRecorder: create, then count")]
    if lease_name:
        lease = (("coordination.k8s.io",), ("leases",))
        rules += [
            Rule(
                *lease,
                ("create",),
                "leader election: the Lease, the first time",
                namespace=lease_namespace,
            ),
            Rule(
                *lease,
                ("get", "update"),
                "leader election: acquire, renew, release",
                namespace=lease_namespace,
                names=(lease_name,),
            ),
        ]
    if metrics_auth:
        rules += [
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
        ]
    return Permissions(rules=tuple(rules))


def permissions_of(module: str | ModuleType) -> Permissions:
    """The ``PERMISSIONS`` a module declares (imported by name if given one).

    Raises:
        ImportError: the module does not import.
        ValueError: it has no ``PERMISSIONS``, or not a ``Permissions``.
    """
    found = importlib.import_module(module) if isinstance(module, str) else module
    declared = getattr(found, "PERMISSIONS", None)
    if declared is None:
        raise ValueError(f"module {found.__name__} declares no PERMISSIONS")
    if not isinstance(declared, Permissions):
        kind = type(declared).__name__
        raise ValueError(
            f"{found.__name__}.PERMISSIONS is a {kind}, not reconcile.rbac.Permissions"
        )
    return declared


# --- writing the roles ---------------------------------------------------------------------------


def policy_rules(grants: Iterable[Grant]) -> list[dict[str, Any]]:
    """The PolicyRules granting exactly ``grants`` (namespaces ignored), merged and sorted as
    controller-gen merges them: one rule per API group, verbs and resource names, listing every
    resource that has them; a verb granted on all objects is not repeated for named ones."""
    verbs: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for grant in grants:
        verbs[(grant.group, grant.resource, grant.name)].add(grant.verb)
    names: dict[tuple[str, str, tuple[str, ...]], set[str]] = defaultdict(set)
    for (group, resource, name), granted_verbs in verbs.items():
        left = granted_verbs - verbs.get((group, resource, ""), set()) if name else granted_verbs
        if left:
            names[(group, resource, tuple(sorted(left)))].add(name)
    resources: dict[tuple[str, tuple[str, ...], tuple[str, ...]], set[str]] = defaultdict(set)
    for (group, resource, rule_verbs), rule_names in names.items():
        named = tuple(sorted(rule_names - {""}))
        if "" in rule_names:
            resources[(group, rule_verbs, ())].add(resource)
        if named:
            resources[(group, rule_verbs, named)].add(resource)
    rules = [_policy_rule(group, sorted(res), v, n) for (group, v, n), res in resources.items()]
    return sorted(
        rules,
        key=lambda r: (r["apiGroups"], r["resources"], r["verbs"], r.get("resourceNames", [])),
    )


def _policy_rule(
    group: str, resources: list[str], verbs: tuple[str, ...], names: tuple[str, ...]
) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": [group], "resources": resources}
    if names:
        rule["resourceNames"] = list(names)
    rule["verbs"] = list(verbs)
    return rule


def role_manifests(
    name: str, permissions: Iterable[Permissions], *, namespace: str | None = None
) -> list[dict[str, Any]]:
    """The ClusterRole ``name`` granting the rules without a namespace, and a Role ``name`` in each
    namespace a rule names (``OWN_NAMESPACE`` becomes ``namespace``); merged, sorted, Roles by
    namespace. The ClusterRole is left out only when every rule is namespaced.

    Raises:
        ValueError: a rule is for ``OWN_NAMESPACE`` and no ``namespace`` was given.
    """
    by_namespace: dict[str, set[Grant]] = defaultdict(set)
    for declared in permissions:
        for rule in declared.rules:
            where = rule.namespace
            if where == OWN_NAMESPACE:
                if not namespace:
                    raise ValueError(
                        f"rule {rule.why!r} is for the controller's own namespace: "
                        "give the namespace it runs in (--namespace)"
                    )
                where = namespace
            by_namespace[where].update(rule.grants())
    manifests = []
    if "" in by_namespace or not by_namespace:
        rules = policy_rules(by_namespace.get("", ()))
        manifests.append(_role("ClusterRole", {"name": name}, rules))
    for where in sorted(set(by_namespace) - {""}):
        rules = policy_rules(by_namespace[where])
        manifests.append(_role("Role", {"name": name, "namespace": where}, rules))
    return manifests


def _role(kind: str, metadata: dict[str, str], rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": RBAC_API_VERSION, "kind": kind, "metadata": metadata, "rules": rules}


# --- what manifests grant ------------------------------------------------------------------------


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


def granted(manifests: Iterable[Mapping[str, Any]], account: tuple[str, str]) -> set[Grant]:
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
