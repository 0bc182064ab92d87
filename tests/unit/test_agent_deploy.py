"""deploy/agent runs ``reconcile agent`` in a member as the CLI understands it, with the
controller-manager's hardening, and its RBAC is the agent's own narrow needs plus one broad,
replaceable role for what Works carry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from controllers.cli import _parser
from controllers.rbac import Grant, granted, problems
from tests.agent_rbac import AGGREGATE_TO_AGENT, agent_member_grants

DEPLOY = Path(__file__).parents[2] / "deploy"
ACCOUNT = ("karmada-system", "reconcile-agent")
Obj = dict[str, Any]


def _documents(directory: str) -> list[Obj]:
    documents: list[Obj] = []
    for path in sorted((DEPLOY / directory).glob("*.yaml")):
        documents += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return documents


def _deployment(directory: str) -> Obj:
    (deployment,) = [d for d in _documents(directory) if d["kind"] == "Deployment"]
    return deployment


def _container(directory: str) -> Obj:
    container: Obj = _deployment(directory)["spec"]["template"]["spec"]["containers"][0]
    return container


def test_the_kustomization_lists_every_manifest() -> None:
    listed = yaml.safe_load((DEPLOY / "agent" / "Kustomization").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in (DEPLOY / "agent").glob("*.yaml"))


def test_the_command_is_reconcile_agent_as_its_parser_reads_it() -> None:
    container = _container("agent")
    command = container["command"]
    assert command[:2] == ["reconcile", "agent"]
    # The kubelet expands $(CLUSTER_NAME) from the container's env.
    (env,) = container["env"]
    expanded = [arg.replace(f"$({env['name']})", "member3") for arg in command[1:]]
    args = _parser().parse_args(expanded)
    assert args.cluster_name == "member3"
    assert args.kubeconfig is None, "the member is reached in-cluster"
    assert args.leader_elect
    assert args.leader_elect_resource_namespace == "karmada-system"
    assert args.health_probe_bind_address == ":8081"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["probes"] == 8081
    assert args.metrics_bind_address == f":{ports['https']}"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probes"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "probes"}


def test_the_host_kubeconfig_and_cluster_name_come_from_one_secret() -> None:
    deployment, container = _deployment("agent"), _container("agent")
    args = _parser().parse_args(
        [arg.replace("$(CLUSTER_NAME)", "x") for arg in container["command"][1:]]
    )
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    (mount,) = [m for m in container["volumeMounts"] if m["name"] != "tmp"]
    secret = volumes[mount["name"]]["secret"]
    assert mount["readOnly"]
    (item,) = secret["items"]
    assert args.karmada_kubeconfig == f"{mount['mountPath']}/{item['path']}"
    assert item["key"] == "karmada.config", "the key docs/multicluster.md's kubectl step writes"
    reference = container["env"][0]["valueFrom"]["secretKeyRef"]
    assert reference == {"name": secret["secretName"], "key": "cluster-name"}


def test_it_is_hardened_as_the_controller_manager() -> None:
    agent, manager = _deployment("agent"), _deployment("controller-manager")
    assert agent["spec"]["replicas"] == 2
    pod, manager_pod = agent["spec"]["template"]["spec"], manager["spec"]["template"]["spec"]
    assert pod["securityContext"] == manager_pod["securityContext"]
    assert (
        _container("agent")["securityContext"]
        == _container("controller-manager")["securityContext"]
    )
    assert pod["terminationGracePeriodSeconds"] == manager_pod["terminationGracePeriodSeconds"]
    assert pod["serviceAccountName"] == ACCOUNT[1]


def test_besides_the_works_role_it_grants_exactly_what_the_agent_asks() -> None:
    documents = _documents("agent")
    broad = [d for d in documents if AGGREGATE_TO_AGENT in d["metadata"].get("labels", {})]
    narrow = [d for d in documents if d not in broad]
    given = granted(narrow, ACCOUNT)
    assert given == agent_member_grants("karmada-system")
    assert problems(given) == []
    assert Grant("", "", "namespaces", "get", "kube-system") in given


def test_the_works_role_is_everything_and_only_through_aggregation() -> None:
    documents = _documents("agent")
    (broad,) = [d for d in documents if AGGREGATE_TO_AGENT in d["metadata"].get("labels", {})]
    assert broad["rules"] == [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    everything = granted(documents, ACCOUNT)
    assert Grant("", "*", "*", "*") in everything
    bound = {d["roleRef"]["name"] for d in documents if d["kind"].endswith("Binding")}
    assert broad["metadata"]["name"] not in bound, "replaced by unlabelling, not by editing binds"


def test_scrapers_may_get_metrics_only() -> None:
    roles = {d["metadata"]["name"]: d for d in _documents("agent") if d["kind"] == "ClusterRole"}
    assert roles["reconcile:agent:metrics-reader"]["rules"] == [
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
    ]


def test_every_namespace_used_is_created_by_deploy() -> None:
    documents = _documents("agent")
    namespaces = {d["metadata"]["name"] for d in documents if d["kind"] == "Namespace"}
    used = {d["metadata"]["namespace"] for d in documents if "namespace" in d["metadata"]}
    assert used == namespaces == {"karmada-system"}
