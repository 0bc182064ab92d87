"""What ``reconcile register`` builds for a Pull cluster's agent: names, rules, resourceNames,
the Cluster, the kubeconfig, and what unjoin deletes for it (the apiserver's verdicts on these
rules are tests/integration/test_register.py's)."""

from __future__ import annotations

import base64
import io
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api import CLUSTER_GVK, crd_paths
from controllers.commands.register import write_private
from controllers.commands.unjoin import agent_host_targets, run_unjoin
from controllers.register import (
    AGENT_ANNOTATION,
    AgentIdentity,
    RegisterError,
    agent_objects,
    agent_targets,
    check_cluster_name,
    kubeconfig,
    pull_cluster,
    register_cluster,
)
from testenv import FakeClient

IDENTITY = AgentIdentity.of("m1", "karmada-cluster")


def _by_kind(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        kinds.setdefault(obj["kind"], []).append(obj)
    return kinds


def _rules_of(objects: list[dict[str, Any]], kind: str, name: str) -> list[dict[str, Any]]:
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            rules: list[dict[str, Any]] = obj["rules"]
            return rules
    raise AssertionError(f"no {kind} {name}")


def test_the_identity_is_a_service_account_in_the_cluster_namespace() -> None:
    assert AgentIdentity("karmada-cluster", "karmada-agent-m1") == IDENTITY
    assert str(IDENTITY) == "karmada-cluster/karmada-agent-m1"
    objects = agent_objects("m1", IDENTITY)
    (account,) = _by_kind(objects)["ServiceAccount"]
    assert account["metadata"] == {"name": "karmada-agent-m1", "namespace": "karmada-cluster"}


def test_the_cluster_role_allows_its_own_cluster_by_name_and_nothing_else() -> None:
    rules = _rules_of(agent_objects("m1", IDENTITY), "ClusterRole", "system:karmada:m1:agent")
    assert rules == [
        {
            "apiGroups": ["cluster.karmada.io"],
            "resources": ["clusters"],
            "verbs": ["get", "list", "watch", "update", "patch"],
            "resourceNames": ["m1"],
        },
        {
            "apiGroups": ["cluster.karmada.io"],
            "resources": ["clusters/status"],
            "verbs": ["update", "patch"],
            "resourceNames": ["m1"],
        },
    ]


def test_the_work_role_is_in_the_execution_namespace_alone() -> None:
    objects = agent_objects("m1", IDENTITY)
    (role,) = [r for r in _by_kind(objects)["Role"] if r["metadata"]["name"].endswith("-work")]
    assert role["metadata"] == {
        "name": "system:karmada:m1:agent-work",
        "namespace": "karmada-es-m1",
    }
    assert role["rules"] == [
        {
            "apiGroups": ["work.karmada.io"],
            "resources": ["works"],
            "verbs": ["get", "list", "watch", "update", "patch"],
        },
        {
            "apiGroups": ["work.karmada.io"],
            "resources": ["works/status"],
            "verbs": ["update", "patch"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    ]


def test_the_lease_role_names_its_lease_and_cannot_create() -> None:
    rules = _rules_of(agent_objects("m1", IDENTITY), "Role", "system:karmada:m1:agent-lease")
    assert rules == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "update"],
            "resourceNames": ["m1"],
        }
    ]


def test_no_rule_grants_secrets_wildcards_creation_of_clusters_or_deletion() -> None:
    for obj in agent_objects("m1", IDENTITY):
        for rule in obj.get("rules", []):
            assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"]
            assert "secrets" not in rule["resources"]
            assert "delete" not in rule["verbs"]
            assert "deletecollection" not in rule["verbs"]
            if rule["resources"] != ["events"]:
                assert "create" not in rule["verbs"], rule


def test_every_binding_binds_its_role_to_the_agent_alone() -> None:
    objects = agent_objects("m1", AgentIdentity("elsewhere", "karmada-agent-m1"))
    bindings = [o for o in objects if o["kind"].endswith("Binding")]
    roles = {(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in objects}
    assert len(bindings) == 3
    for binding in bindings:
        ref = binding["roleRef"]
        kind = binding["kind"].removesuffix("Binding")
        assert ref == {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": ref["name"]}
        assert (kind, ref["name"], binding["metadata"].get("namespace")) in roles
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "karmada-agent-m1", "namespace": "elsewhere"}
        ]
    lease_role = _by_kind(objects)["Role"][1]
    assert lease_role["metadata"]["namespace"] == "elsewhere", "the Lease's namespace"


def test_unjoin_deletes_everything_register_made_bindings_first() -> None:
    made = {
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
        for o in agent_objects("m1", IDENTITY)
    }
    targets = agent_targets("m1", IDENTITY)
    deleted = {(gvk.kind, name, namespace) for gvk, name, namespace in targets}
    assert deleted == made | {("Lease", "m1", "karmada-cluster")}
    kinds = [gvk.kind for gvk, _, _ in targets]
    assert kinds[0] == "ClusterRoleBinding"
    assert kinds[-1] == "ServiceAccount"
    assert [str(t) for t in agent_host_targets("m1", IDENTITY)][-1] == (
        'serviceaccount "karmada-agent-m1" in namespace karmada-cluster'
    )


def test_the_pull_cluster_carries_no_credentials_and_only_the_fields_given() -> None:
    bare = pull_cluster("m1", IDENTITY)
    assert bare["spec"] == {"syncMode": "Pull"}
    assert bare["metadata"]["annotations"] == {AGENT_ANNOTATION: "karmada-cluster/karmada-agent-m1"}
    full = pull_cluster(
        "m1", IDENTITY, api_endpoint="https://m1:6443", provider="aws", region="eu-west-1"
    )
    assert full["spec"] == {
        "syncMode": "Pull",
        "apiEndpoint": "https://m1:6443",
        "provider": "aws",
        "region": "eu-west-1",
    }


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({AGENT_ANNOTATION: "karmada-cluster/karmada-agent-m1"}, IDENTITY),
        ({AGENT_ANNOTATION: "no-slash"}, None),
        ({AGENT_ANNOTATION: "/name"}, None),
        ({AGENT_ANNOTATION: "ns/"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_the_recorded_identity_is_read_back_only_when_whole(
    annotations: dict[str, str] | None, expected: AgentIdentity | None
) -> None:
    assert AgentIdentity.recorded({"metadata": {"annotations": annotations}}) == expected


def test_the_kubeconfig_names_the_server_the_ca_and_the_token() -> None:
    document = kubeconfig("https://host:6443", b"PEM", "tok", "system:serviceaccount:ns:sa", "h")
    (cluster,) = document["clusters"]
    assert cluster["cluster"] == {
        "server": "https://host:6443",
        "certificate-authority-data": base64.b64encode(b"PEM").decode(),
        "tls-server-name": "h",
    }
    (user,) = document["users"]
    assert user == {"name": "system:serviceaccount:ns:sa", "user": {"token": "tok"}}
    (context,) = document["contexts"]
    assert document["current-context"] == context["name"]
    assert context["context"] == {"cluster": cluster["name"], "user": user["name"]}
    bare = kubeconfig("https://h", None, "t", "u")["clusters"][0]["cluster"]
    assert bare == {"server": "https://h"}, "no CA: the system's trust"


def test_the_kubeconfig_file_is_private_even_when_it_existed(tmp_path: Path) -> None:
    path = tmp_path / "agent.kubeconfig"
    path.write_text("old and longer than the new text\n")
    os.chmod(path, 0o644)
    write_private(path, yaml.safe_dump({"a": 1}))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert yaml.safe_load(path.read_text()) == {"a": 1}
    fresh = tmp_path / "new.kubeconfig"
    write_private(fresh, "x")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("Member1", "not a DNS-1123 label"),
        ("m_1", "not a DNS-1123 label"),
        ("-m1", "not a DNS-1123 label"),
        ("", "not a DNS-1123 label"),
        ("m" * 49, "longer than 48 characters"),
    ],
)
def test_a_name_karmada_refuses_is_refused_before_anything_is_written(name: str, why: str) -> None:
    with pytest.raises(RegisterError, match=why):
        check_cluster_name(name)


def test_a_name_of_48_characters_is_fine() -> None:
    check_cluster_name("m" * 48)


@pytest.mark.asyncio
@pytest.mark.parametrize("namespace", ["karmada-cluster", "elsewhere"])
async def test_unjoin_of_a_pull_cluster_deletes_its_agent_and_guesses_no_secret(
    namespace: str,
) -> None:
    identity = AgentIdentity.of("m1", namespace)
    fake = FakeClient(objects=[pull_cluster("m1", identity)], crds=crd_paths())
    out = io.StringIO()
    await run_unjoin("m1", host=fake, member=None, out=out, dry_run=True)
    lines = out.getvalue().splitlines()
    assert lines[0] == 'cluster.cluster.karmada.io "m1" would be deleted (dry run)'
    assert lines[1:] == [
        f"{t} would be deleted (dry run)" for t in agent_host_targets("m1", identity)
    ]
    assert f'serviceaccount "karmada-agent-m1" in namespace {namespace}' in lines[-1]


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.parametrize(
    ("endpoint", "reason"),
    [
        ("http://host.example:6443", "InsecureEndpoint"),
        ("https://user:secret@host.example", "InvalidEndpoint"),
        ("https://host.example/?next=evil", "InvalidEndpoint"),
        ("host.example\n:6443", "InvalidEndpoint"),
    ],
)
async def test_a_host_endpoint_the_token_could_leak_through_is_refused_before_any_write(
    endpoint: str, reason: str
) -> None:
    fake = FakeClient(crds=crd_paths())
    with pytest.raises(RegisterError, match=f"--host-endpoint is refused \\({reason}\\)") as caught:
        await register_cluster("m1", host=fake, server=endpoint)
    assert "secret" not in str(caught.value)
    assert (await fake.list(CLUSTER_GVK))["items"] == []
