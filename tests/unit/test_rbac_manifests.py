"""deploy/controller-manager's RBAC is exactly what the controllers declare they need, no more.

The declarations (``PERMISSIONS`` of each controller, gathered by ``controllers.rbac``) say which
requests the code makes on the host; these tests compute what deploy/'s manifests grant the
controller-manager's ServiceAccount (aggregated ClusterRoles filled as kube-controller-manager
fills them) and compare the two both ways, then check the least-privilege rules of issue #10.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.detector import TEMPLATE_VERBS
from controllers.interpreter.native_status import AGGREGATE
from controllers.rbac import (
    DEFAULT_TEMPLATE_KINDS,
    SERVICE_ACCOUNT,
    Grant,
    aggregated_rules,
    declared,
    granted,
    problems,
    required,
    template_verbs,
)

DEPLOY = Path(__file__).parents[2] / "deploy" / "controller-manager"


def _manifests(*names: str) -> list[dict[str, Any]]:
    documents = []
    for name in names:
        documents += [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]
    return documents


def _applied() -> list[dict[str, Any]]:
    """What ``kubectl apply -f deploy/controller-manager/`` applies (not optional/)."""
    return _manifests(*sorted(p.name for p in DEPLOY.glob("*.yaml")))


def _listed(grants: set[Grant]) -> str:
    return "\n".join(f"  {grant}" for grant in sorted(grants)) or "  (none)"


def test_deploy_grants_exactly_what_the_controllers_declare() -> None:
    wanted, given = required(), granted(_applied())
    missing = wanted - given
    assert not missing, f"declared, not granted by deploy/ (would be refused):\n{_listed(missing)}"
    extra = given - wanted
    assert not extra, f"granted by deploy/, declared by no controller:\n{_listed(extra)}"


def test_deploy_follows_least_privilege() -> None:
    assert problems(granted(_applied())) == []


@pytest.mark.parametrize(
    ("grant", "expected"),
    [
        (Grant("", "*", "*", "get"), ["wildcard: get *.*"]),
        (Grant("", "apps", "deployments", "*"), ["wildcard: * deployments.apps"]),
        (Grant("", "", "secrets", "get"), ["Secrets in every namespace: get secrets.core"]),
        (Grant("karmada-cluster", "", "secrets", "get"), []),
        (Grant("", "", "pods/proxy", "get"), ["proxy subresource: get pods/proxy.core"]),
    ],
    ids=[
        "wildcard group",
        "wildcard verb",
        "secrets everywhere",
        "secrets in one namespace",
        "proxy",
    ],
)
def test_least_privilege_problems_are_named(grant: Grant, expected: list[str]) -> None:
    assert problems({grant}) == expected


def test_the_old_wildcard_role_is_refused() -> None:
    role = {
        "kind": "ClusterRole",
        "metadata": {"name": "old"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list"]}],
    }
    binding = {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "old"},
        "roleRef": {"kind": "ClusterRole", "name": "old"},
        "subjects": [
            {"kind": "ServiceAccount", "namespace": "karmada-system", "name": SERVICE_ACCOUNT[1]}
        ],
    }
    assert problems(granted([role, binding])) == ["wildcard: get *.*", "wildcard: list *.*"]


def test_secrets_are_granted_only_in_the_cluster_namespace() -> None:
    secrets = {g for g in granted(_applied()) if g.resource == "secrets"}
    assert secrets == {
        Grant("karmada-cluster", "", "secrets", verb) for verb in ("get", "list", "watch")
    }


def test_the_opt_in_secrets_role_aggregates_into_the_templates_role() -> None:
    opt_in = "../overlays/propagate-secrets/propagate-secrets.yaml"
    with_secrets = granted(_applied() + _manifests(opt_in))
    added = with_secrets - granted(_applied())
    assert added == {Grant("", "", "secrets", verb) for verb in TEMPLATE_VERBS}


def test_template_kinds_get_status_writes_only_where_status_is_aggregated() -> None:
    given = granted(_applied())
    for kind in DEFAULT_TEMPLATE_KINDS:
        status = Grant("", kind.group, f"{kind.plural}/status", "update")
        assert (status in given) == kind.aggregated, kind
    aggregated = {(g.group, g.kind) for g in AGGREGATE}
    shipped = {(k.group, k.kind) for k in DEFAULT_TEMPLATE_KINDS}
    assert aggregated <= shipped, "every kind aggregated natively is propagated by default"


def test_the_detector_checks_every_verb_the_controllers_use_on_templates() -> None:
    assert set(template_verbs()) == set(TEMPLATE_VERBS)


def test_metrics_reader_lets_scrapers_get_metrics_only() -> None:
    roles = {d["metadata"]["name"]: d for d in _applied() if d["kind"] == "ClusterRole"}
    assert roles["reconcile:metrics-reader"]["rules"] == [
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    ]


def test_every_role_namespace_is_created_by_deploy() -> None:
    namespaces = {d["metadata"]["name"] for d in _applied() if d["kind"] == "Namespace"}
    used = {d["metadata"]["namespace"] for d in _applied() if "namespace" in d["metadata"]}
    assert used <= namespaces


def test_each_declaration_says_why() -> None:
    for name, permissions in declared().items():
        for rule in permissions.rules:
            assert rule.why, f"{name}: {rule}"


def test_an_unknown_controller_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown controller 'nope'"):
        declared(["nope"])


def test_aggregation_takes_rules_of_the_labelled_roles_only() -> None:
    aggregate = {
        "kind": "ClusterRole",
        "metadata": {"name": "all"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "true"}}]},
        "rules": [{"apiGroups": ["x"], "resources": ["stale"], "verbs": ["get"]}],
    }
    rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
    labelled = {"kind": "ClusterRole", "metadata": {"name": "l", "labels": {"a": "true"}}}
    other = {"kind": "ClusterRole", "metadata": {"name": "o"}, "rules": [{"verbs": ["*"]}]}
    assert aggregated_rules(aggregate, [aggregate, {**labelled, "rules": [rule]}, other]) == [rule]
