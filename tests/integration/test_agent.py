"""reconcile agent against testenv: a Pull member served by its agent under the credential
``reconcile register`` minted, which reaches that member's Works, Cluster and Lease and nothing
else on the host (issue #31)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from controllers.agent import (
    AgentError,
    AgentOptions,
    Registration,
    build_agent,
    claim_cluster,
    cluster_id,
)
from controllers.api import (
    CLUSTER_GVK,
    KARMADA_CLUSTER_NAMESPACE,
    MANAGED_LABEL,
    WORK_APPLIED_CONDITION,
    WORK_GVK,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
    execution_namespace,
)
from controllers.cluster import ClusterStatusOptions
from controllers.cluster.connection import SECRET
from controllers.cluster.lease import LEASE
from controllers.register import register_cluster
from reconcile import (
    GVK,
    Client,
    ClusterConfig,
    Forbidden,
    ManagerOptions,
    Obj,
    get_condition,
)
from testenv import Environment, eventually
from tests.builders import admin_client, configmap

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

CONFIGMAP = GVK("", "v1", "ConfigMap")
NAMESPACE = GVK("", "v1", "Namespace")
FAST = ClusterStatusOptions(update_frequency=1, success_threshold=0, failure_threshold=0)


def work(cluster: str, name: str, manifest: Obj) -> Obj:
    """A Work for ``cluster`` as the binding controller makes them."""
    namespace = execution_namespace(cluster)
    meta = manifest["metadata"]
    meta.setdefault("labels", {})[MANAGED_LABEL] = "true"
    meta.setdefault("annotations", {}).update(
        {WORK_NAME_ANNOTATION: name, WORK_NAMESPACE_ANNOTATION: namespace}
    )
    return {
        "apiVersion": WORK_GVK.api_version,
        "kind": "Work",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"workload": {"manifests": [manifest]}},
    }


@asynccontextmanager
async def agent(
    name: str, host: ClusterConfig, member: ClusterConfig
) -> AsyncIterator[list[MutableMapping[str, Any]]]:
    """The agent of ``name`` running (claimed first, as ``run_agent`` does); yields its logs."""
    async with Client(host) as on_host, Client(member) as on_member:
        await claim_cluster(on_host, await cluster_id(on_member), Registration(name))
    options = AgentOptions(Registration(name), cluster_status=FAST)
    manager, _ = build_agent(host, member, options, ManagerOptions(metrics_bind_address="0"))
    with capture_logs() as logs:
        async with anyio.create_task_group() as group:
            await group.start(manager.start)
            yield logs
            manager.stop()


def refused(logs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [line for line in logs if "403" in str(line) or "Forbidden" in str(line)]


async def test_a_pull_member_is_served_by_its_agent_with_only_its_own_rights(
    multicluster: Environment, karmada_client: Client, namespace: str, tmp_path: Path
) -> None:
    client = karmada_client
    name = f"pull-{secrets.token_hex(3)}"
    registered = await register_cluster(name, host=client)
    path = tmp_path / "agent.kubeconfig"
    path.write_text(registered.kubeconfig)
    host = await ClusterConfig.from_kubeconfig(path)
    plane = multicluster.members["member1"]
    member = await ClusterConfig.from_kubeconfig(plane.kubeconfig, temp_dir=tmp_path)
    async with await admin_client(plane) as member_admin, agent(name, host, member) as logs:
        meta = {"name": namespace}
        await member_admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
        await client.create(work(name, "cm", configmap("pulled", namespace, a="1")))

        async def applied() -> bool:
            found = await client.get(WORK_GVK, "cm", namespace=execution_namespace(name))
            condition = get_condition(found, WORK_APPLIED_CONDITION) or {}
            return condition.get("status") == "True"

        await eventually(applied, timeout=30)
        assert (await member_admin.get(CONFIGMAP, "pulled", namespace=namespace))["data"] == {
            "a": "1"
        }

        # Edited in the member, outside the execution namespace the agent's host cache is
        # scoped to: its member watch sees it and the Work's content comes back.
        await member_admin.patch(CONFIGMAP, "pulled", {"data": {"a": "2"}}, namespace=namespace)

        async def reverted() -> bool:
            found = await member_admin.get(CONFIGMAP, "pulled", namespace=namespace)
            return bool(found["data"] == {"a": "1"})

        await eventually(reverted, timeout=30)

        async def ready() -> bool:
            cluster = await client.get(CLUSTER_GVK, name)
            return (get_condition(cluster, "Ready") or {}).get("status") == "True"

        await eventually(ready, timeout=30)
        lease = await client.get(LEASE, name, namespace=KARMADA_CLUSTER_NAMESPACE)
        assert lease["spec"].get("renewTime")

        # The agent's host credential reaches nothing else.
        async with Client(host) as agent_host:
            with pytest.raises(Forbidden):
                await agent_host.list(WORK_GVK, namespace=execution_namespace("member2"))
            with pytest.raises(Forbidden):
                await agent_host.list(SECRET, namespace=KARMADA_CLUSTER_NAMESPACE)
            with pytest.raises(Forbidden):
                await agent_host.get(CLUSTER_GVK, "member1")

        await client.delete(WORK_GVK, "cm", namespace=execution_namespace(name))

        async def removed() -> bool:
            listed = await member_admin.list(CONFIGMAP, namespace=namespace)
            return all(item["metadata"]["name"] != "pulled" for item in listed["items"])

        await eventually(removed, timeout=30)
    assert refused(logs) == [], "the agent met a 403 on the happy path"


async def test_an_agent_whose_credential_is_another_clusters_stops_saying_so(
    multicluster: Environment, karmada_client: Client, tmp_path: Path
) -> None:
    """Bad input: started as member1 (a Push Cluster of another member) with the kubeconfig
    register minted for this one, the agent claims nothing and says why."""
    name = f"pull-{secrets.token_hex(3)}"
    registered = await register_cluster(name, host=karmada_client)
    path = tmp_path / "agent.kubeconfig"
    path.write_text(registered.kubeconfig)
    async with Client(await ClusterConfig.from_kubeconfig(path)) as on_host:
        with pytest.raises(AgentError, match="may not read Cluster member1"):
            await claim_cluster(on_host, "uid-of-this-member", Registration("member1"))
