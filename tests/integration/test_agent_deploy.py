"""reconcile agent in a member as deploy/agent's ServiceAccount, under deploy/agent's RBAC applied
unchanged with kubectl (issue #31, shipping the agent).

testenv runs no kube-controller-manager, so the Works role stays empty until this test plays the
clusterrole-aggregation controller: first the agent runs with the narrow roles only (what its own
code asks of the member) and registers, reports Ready and leads without one 403; then, with the
broad role aggregated in, it also applies a Work's object.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from controllers.agent import AgentOptions, Registration, build_agent, claim_cluster, cluster_id
from controllers.agent.run import agent_lease_name
from controllers.api import CLUSTER_GVK, WORK_APPLIED_CONDITION, WORK_GVK, execution_namespace
from controllers.cluster import ClusterStatusOptions
from controllers.cluster.lease import LEASE
from controllers.rbac import aggregated_rules
from controllers.register import register_cluster
from reconcile import GVK, Client, ClusterConfig, ManagerOptions, get_condition
from testenv import ControlPlane, Environment, eventually
from tests.builders import admin_client, configmap
from tests.integration.test_agent import refused, work

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

DEPLOY = Path(__file__).parents[2] / "deploy" / "agent"
ACCOUNT = ("karmada-system", "reconcile-agent")
CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
CONFIGMAP = GVK("", "v1", "ConfigMap")
SERVICE_ACCOUNT = GVK("", "v1", "ServiceAccount")
WORKS_ROLE = "reconcile:agent:works"
FAST = ClusterStatusOptions(update_frequency=1, success_threshold=0, failure_threshold=0)


async def _as_deploy_agent(plane: ControlPlane, admin: Client, tmp_path: Path) -> ClusterConfig:
    """deploy/agent's identity applied to ``plane``; a config of its ServiceAccount."""
    files = [f"--filename={DEPLOY / name}" for name in ("namespace.yaml", "serviceaccount.yaml")]
    await plane.kubectl("apply", "--server-side", "--force-conflicts", *files)
    await plane.kubectl(
        "apply", "--server-side", "--force-conflicts", f"--filename={DEPLOY / 'rbac.yaml'}"
    )
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    answer = await admin.create_subresource(
        SERVICE_ACCOUNT, ACCOUNT[1], "token", request, namespace=ACCOUNT[0]
    )
    ca = base64.b64encode(plane.apiserver.serving_ca.cert_pem).decode()
    user = {"name": "agent", "user": {"token": answer["status"]["token"]}}
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "m", "cluster": {"server": plane.url, "certificate-authority-data": ca}}
        ],
        "users": [user],
        "contexts": [{"name": "m", "context": {"cluster": "m", "user": "agent"}}],
        "current-context": "m",
    }
    return await ClusterConfig.from_kubeconfig_dict(document, temp_dir=tmp_path / "member")


async def _set_works_rules(admin: Client, rules: list[dict[str, Any]] | None) -> None:
    """Empty the Works role, or fill it as the clusterrole-aggregation controller would (None)."""
    roles = (await admin.list(CLUSTER_ROLE))["items"]
    (role,) = [r for r in roles if r["metadata"]["name"] == WORKS_ROLE]
    await admin.update({**role, "rules": aggregated_rules(role, roles) if rules is None else rules})


@asynccontextmanager
async def _agent(
    name: str, host: ClusterConfig, member: ClusterConfig
) -> AsyncIterator[list[MutableMapping[str, Any]]]:
    """The agent as deploy/agent runs it (leader election in the member's karmada-system)."""
    async with Client(host) as on_host, Client(member) as on_member:
        await claim_cluster(on_host, await cluster_id(on_member), Registration(name))
    base = ManagerOptions(
        metrics_bind_address="0",
        leader_election=True,
        leader_election_namespace=ACCOUNT[0],
        leader_election_release_on_cancel=True,
    )
    options = AgentOptions(Registration(name), cluster_status=FAST)
    manager, _ = build_agent(host, member, options, base)
    with capture_logs() as logs:
        async with anyio.create_task_group() as group:
            await group.start(manager.start)
            yield logs
            manager.stop()


async def test_the_agent_runs_under_deploy_agents_rbac(
    multicluster: Environment, karmada_client: Client, namespace: str, tmp_path: Path
) -> None:
    client = karmada_client
    name = f"pull-{secrets.token_hex(3)}"
    registered = await register_cluster(name, host=client)
    path = tmp_path / "agent.kubeconfig"
    path.write_text(registered.kubeconfig)
    host = await ClusterConfig.from_kubeconfig(path)
    plane = multicluster.members["member2"]
    async with await admin_client(plane) as member_admin:
        member = await _as_deploy_agent(plane, member_admin, tmp_path)
        await _set_works_rules(member_admin, [])

        async def ready() -> bool:
            cluster = await client.get(CLUSTER_GVK, name)
            return (get_condition(cluster, "Ready") or {}).get("status") == "True"

        async with _agent(name, host, member) as logs:
            await eventually(ready, timeout=30)
            lease = await member_admin.get(LEASE, agent_lease_name(name), namespace=ACCOUNT[0])
            assert lease["spec"]["holderIdentity"]
        assert refused(logs) == [], "the narrow roles are short of what the agent's code asks"
        assert (await client.get(CLUSTER_GVK, name))["spec"]["id"]

        await _set_works_rules(member_admin, None)
        meta = {"name": namespace}
        await member_admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
        async with _agent(name, host, member) as logs:
            await client.create(work(name, "cm", configmap("pulled", namespace, a="1")))

            async def applied() -> bool:
                found = await client.get(WORK_GVK, "cm", namespace=execution_namespace(name))
                condition = get_condition(found, WORK_APPLIED_CONDITION) or {}
                return condition.get("status") == "True"

            await eventually(applied, timeout=30)
            copy = await member_admin.get(CONFIGMAP, "pulled", namespace=namespace)
            assert copy["data"] == {"a": "1"}
        assert refused(logs) == [], "the agent met a 403 with the Works role aggregated"
