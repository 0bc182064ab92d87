"""``reconcile.rbac``: declared permissions to ClusterRole/Roles, merged and sorted as
controller-gen does, and ``reconcile gen rbac`` writing them."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from controllers.cli import main
from reconcile.rbac import (
    OWN_NAMESPACE,
    Grant,
    Permissions,
    Rule,
    cache,
    granted,
    manager_permissions,
    permissions_of,
    policy_rules,
    role_manifests,
)

DECLARED = Permissions(
    rules=(
        Rule(("example.com",), ("copies/status",), ("update", "patch"), "status"),
        cache("", "configmaps"),
        Rule(("",), ("configmaps",), ("get", "create", "patch"), "the copies"),
        cache("", "secrets"),
        cache("example.com", "copies"),
        Rule(("",), ("configmaps",), ("list",), "a Role too", namespace="team"),
    )
)


def test_rules_with_the_same_group_and_verbs_are_merged_and_sorted() -> None:
    cluster_role, role = role_manifests("manager-role", [DECLARED])
    assert cluster_role["kind"] == "ClusterRole"
    assert cluster_role["metadata"] == {"name": "manager-role"}
    assert cluster_role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["create", "get", "list", "patch", "watch"],
        },
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list", "watch"]},
        {"apiGroups": ["example.com"], "resources": ["copies"], "verbs": ["list", "watch"]},
        {
            "apiGroups": ["example.com"],
            "resources": ["copies/status"],
            "verbs": ["patch", "update"],
        },
    ]
    assert role["kind"] == "Role"
    assert role["metadata"] == {"name": "manager-role", "namespace": "team"}
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]


def test_resources_sharing_group_and_verbs_become_one_rule() -> None:
    rules = policy_rules(cache("apps", "deployments", "replicasets").grants())
    assert rules == [
        {
            "apiGroups": ["apps"],
            "resources": ["deployments", "replicasets"],
            "verbs": ["list", "watch"],
        }
    ]


def test_named_objects_get_their_own_rule_without_the_verbs_granted_on_all() -> None:
    rules = policy_rules(
        [
            *Rule(("",), ("leases",), ("create", "get"), "all").grants(),
            *Rule(("",), ("leases",), ("get", "update"), "one", names=("x",)).grants(),
        ]
    )
    assert rules == [
        {"apiGroups": [""], "resources": ["leases"], "verbs": ["create", "get"]},
        {"apiGroups": [""], "resources": ["leases"], "resourceNames": ["x"], "verbs": ["update"]},
    ]


def test_the_output_does_not_depend_on_declaration_order() -> None:
    backwards = Permissions(rules=tuple(reversed(DECLARED.rules)))
    assert role_manifests("r", [backwards]) == role_manifests("r", [DECLARED])


def test_the_roles_grant_exactly_what_is_declared() -> None:
    manifests = role_manifests("r", [DECLARED])
    bindings = [
        {
            "kind": kind,
            "metadata": {"name": "r", "namespace": namespace},
            "roleRef": {"kind": role, "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "namespace": "sys", "name": "me"}],
        }
        for kind, role, namespace in [
            ("ClusterRoleBinding", "ClusterRole", ""),
            ("RoleBinding", "Role", "team"),
        ]
    ]
    assert granted([*manifests, *bindings], ("sys", "me")) == DECLARED.grants()


def test_own_namespace_needs_the_namespace_it_runs_in() -> None:
    declared = manager_permissions(lease_name="my-lease")
    with pytest.raises(ValueError, match=r"own namespace.*--namespace"):
        role_manifests("r", [declared])
    _, role = role_manifests("r", [declared], namespace="sys")
    assert role["metadata"] == {"name": "r", "namespace": "sys"}
    assert Grant("sys", "coordination.k8s.io", "leases", "update", "my-lease") in granted(
        [
            role,
            {
                "kind": "RoleBinding",
                "metadata": {"name": "r", "namespace": "sys"},
                "roleRef": {"kind": "Role", "name": "r"},
                "subjects": [{"kind": "ServiceAccount", "namespace": "sys", "name": "me"}],
            },
        ],
        ("sys", "me"),
    )
    assert all(r.namespace == OWN_NAMESPACE for r in declared.rules if "leases" in r.resources)


def test_only_namespaced_rules_make_no_cluster_role() -> None:
    only = Permissions(rules=(Rule(("",), ("pods",), ("get",), "x", namespace="a"),))
    assert [m["kind"] for m in role_manifests("r", [only])] == ["Role"]
    assert [m["kind"] for m in role_manifests("r", [])] == ["ClusterRole"]


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "copier_controller.py").write_text(
        "from reconcile.rbac import Permissions, Rule, cache\n"
        "PERMISSIONS = Permissions(rules=(cache('', 'configmaps'),\n"
        "    Rule(('',), ('configmaps',), ('create',), 'copies'),))\n"
    )
    (tmp_path / "undeclared.py").write_text("PERMISSIONS = ['get pods']\n")
    monkeypatch.chdir(tmp_path)
    yield "copier_controller"
    for name in ("copier_controller", "undeclared"):
        sys.modules.pop(name, None)


def test_gen_rbac_writes_role_yaml(module: str, tmp_path: Path) -> None:
    assert main(["gen", "rbac", module, "--role-name", "manager-role", "-o", "config/rbac"]) == 0
    (role,) = yaml.safe_load_all((tmp_path / "config/rbac/role.yaml").read_text())
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "list", "watch"]}
    ]


def test_gen_rbac_to_stdout(module: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gen", "rbac", module, "--role-name", "m", "--output", "-"]) == 0
    (role,) = yaml.safe_load_all(capsys.readouterr().out)
    assert role["metadata"] == {"name": "m"}


@pytest.mark.parametrize(
    ("target", "error"),
    [
        ("undeclared", "undeclared.PERMISSIONS is a list, not reconcile.rbac.Permissions"),
        ("yaml", "module yaml declares no PERMISSIONS"),
        ("no_such_module_here", "No module named 'no_such_module_here'"),
    ],
    ids=["wrong type", "no declaration", "no module"],
)
def test_gen_rbac_names_what_is_wrong(
    module: str, target: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gen", "rbac", target, "--role-name", "m"]) == 2
    assert error in capsys.readouterr().err


def test_gen_rbac_of_a_module_that_raises_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken_perms.py"
    broken.write_text("raise RuntimeError('boom')\n")
    assert main(["gen", "rbac", str(broken), "--role-name", "m"]) == 2
    assert "does not import: RuntimeError: boom" in capsys.readouterr().err


def test_permissions_of_a_module_object() -> None:
    found = types.ModuleType("m")
    found.PERMISSIONS = DECLARED  # type: ignore[attr-defined]
    assert permissions_of(found) is DECLARED
