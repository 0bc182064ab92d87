"""Push and Pull on real apiservers: the controller-manager leaves a Pull Cluster to its agent.

Karmada's split: karmada-controller-manager's execution, work-status and cluster-status
controllers serve Push clusters only; a Pull cluster's karmada-agent applies its Works and
reports its status and Lease from inside the member. The cluster controller serves both.
"""

from __future__ import annotations

import contextlib
import secrets
from typing import Any, Final

import pytest

from controllers.api import (
    CLUSTER_GVK,
    EXECUTION_CONTROLLER_FINALIZER,
    KARMADA_CLUSTER_NAMESPACE,
    READY_CONDITION,
    SYNC_MODE_PULL,
    SYNC_MODE_PUSH,
    WORK_APPLIED_CONDITION,
    WORK_GVK,
    execution_namespace,
)
from controllers.cluster import MEMBER_CONFIG_INVALID, ClusterStatusOptions
from controllers.cluster.lease import cluster_lease_renew_time
from controllers.controllermanager import build
from reconcile import (
    EVENT_GVK,
    GVK,
    AlreadyExists,
    Client,
    NotFound,
    Obj,
    get_condition,
    is_condition_true,
)
from testenv import Environment, eventually, manager_for, running
from tests.builders import admin_client, configmap, delete_and_wait, get_or_none

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

CONFIGMAP: Final = GVK("", "v1", "ConfigMap")
NAMESPACE: Final = GVK("", "v1", "Namespace")
TIMEOUT: Final = 30.0
PUSH: Final = "member1"


def _cluster(name: str, endpoint: str, mode: str) -> Obj:
    # No secretRef: a Pull Cluster has none, and member1 is reached by its kubeconfig file.
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"apiEndpoint": endpoint, "syncMode": mode},
    }


def _work(cluster: str, name: str, manifest: Obj) -> Obj:
    return {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": name, "namespace": execution_namespace(cluster)},
        "spec": {"workload": {"manifests": [manifest]}},
    }


async def _set_value(host: Client, cluster: str, name: str, value: str) -> None:
    work = await host.get(WORK_GVK, name, namespace=execution_namespace(cluster))
    work["spec"]["workload"]["manifests"][0]["data"] = {"v": value}
    await host.update(work)


async def _member_value(member: Client, name: str, namespace: str) -> str | None:
    found = await get_or_none(member, CONFIGMAP, name, namespace)
    return None if found is None else str(found.get("data", {}).get("v"))


async def test_a_pull_cluster_is_left_to_its_agent_while_a_push_member_keeps_working(
    multicluster: Environment, karmada_client: Client, namespace: str
) -> None:
    host, plane = karmada_client, multicluster.host
    pull = f"pull-{secrets.token_hex(3)}"
    member1, member2 = multicluster.members["member1"], multicluster.members["member2"]
    for member in (member1, member2):
        await member.create_namespace(namespace)
    # Where the Leases are (join makes it; here no join ran, maybe).
    with contextlib.suppress(AlreadyExists):
        await host.create(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": KARMADA_CLUSTER_NAMESPACE},
            }
        )
    await host.apply(
        _cluster(PUSH, member1.url, SYNC_MODE_PUSH), field_manager="test-pull-split", force=True
    )
    # Reachable (member2's endpoint): were it engaged, its Works would land in member2.
    await host.create(_cluster(pull, member2.url, SYNC_MODE_PULL))
    manager = await manager_for(plane, metrics_bind_address="0")
    context = build(
        manager,
        controllers=["cluster", "cluster-status", "execution"],
        member_kubeconfigs={PUSH: member1.kubeconfig},
        scratch=plane.directory / "client",
        cluster_status=ClusterStatusOptions(1, 0, 0),
    )
    async with (
        running(manager),
        await admin_client(member1) as push_member,
        await admin_client(member2) as pull_member,
    ):
        try:
            # The cluster controller serves every Cluster: the Pull one gets its namespace too.
            async def namespaced() -> bool:
                for cluster in (PUSH, pull):
                    if await get_or_none(host, NAMESPACE, execution_namespace(cluster)) is None:
                        return False
                return True

            await eventually(namespaced, timeout=TIMEOUT)
            await host.create(_work(pull, "pulled", configmap("pulled", namespace, v="1")))
            await host.create(_work(PUSH, "pushed", configmap("pushed", namespace, v="1")))

            async def pushed(value: str) -> bool:
                work = await host.get(WORK_GVK, "pushed", namespace=execution_namespace(PUSH))
                applied = is_condition_true(work, WORK_APPLIED_CONDITION)
                return applied and await _member_value(push_member, "pushed", namespace) == value

            await eventually(lambda: pushed("1"), timeout=TIMEOUT)
            # Both changed, the Pull Work first: by the time the Push one is applied again, the
            # Pull one would have been too, were it this process's.
            await _set_value(host, pull, "pulled", "2")
            await _set_value(host, PUSH, "pushed", "2")
            await eventually(lambda: pushed("2"), timeout=TIMEOUT)
            renewed = await cluster_lease_renew_time(host, PUSH, KARMADA_CLUSTER_NAMESPACE)

            async def probed_again() -> bool:
                now = await cluster_lease_renew_time(host, PUSH, KARMADA_CLUSTER_NAMESPACE)
                return now is not None and now != renewed

            await eventually(probed_again, timeout=TIMEOUT)

            work = await host.get(WORK_GVK, "pulled", namespace=execution_namespace(pull))
            assert EXECUTION_CONTROLLER_FINALIZER not in (work["metadata"].get("finalizers") or [])
            assert not work.get("status"), "the agent writes a Pull Work's status"
            assert await _member_value(pull_member, "pulled", namespace) is None

            cluster = await host.get(CLUSTER_GVK, pull)
            _assert_not_reported(cluster)
            assert await cluster_lease_renew_time(host, pull, KARMADA_CLUSTER_NAMESPACE) is None
            assert context.members.problem(pull) is None  # no SecretRefNotAllowed: no secretRef
            assert context.members.get(pull) is None
            assert context.members.get(PUSH) is not None
            events = (await host.list(EVENT_GVK, namespace="default"))["items"]
            assert not [
                e
                for e in events
                if e["reason"] == MEMBER_CONFIG_INVALID and e["involvedObject"]["name"] == pull
            ]
        finally:
            # Released while the controllers run: the Push Work's finalizer by the execution
            # controller, the Pull Cluster's by the cluster controller (it deletes its Works).
            # No agent runs: a finalizer on the Pull Work (the failure this test is about) is
            # stripped, so that failure is what the test reports, not a stuck cleanup.
            with contextlib.suppress(NotFound):
                where = execution_namespace(pull)
                await host.delete(WORK_GVK, "pulled", namespace=where)  # then none is added
                pulled = await host.get(WORK_GVK, "pulled", namespace=where)
                await host.patch(pulled, {"metadata": {"finalizers": None}})
            for owner, name in ((PUSH, "pushed"), (pull, "pulled")):
                await delete_and_wait(
                    host, WORK_GVK, name, execution_namespace(owner), timeout=TIMEOUT
                )
            await delete_and_wait(host, CLUSTER_GVK, pull, timeout=TIMEOUT)


def _assert_not_reported(cluster: dict[str, Any]) -> None:
    """No status from the cluster-status controller: no member facts, no Ready it would set (the
    health monitor may have said Unknown: nobody reported, as with a stopped agent)."""
    status = cluster.get("status") or {}
    assert "apiEnablements" not in status
    assert "kubernetesVersion" not in status
    ready = get_condition(cluster, READY_CONDITION)
    assert ready is None or ready["status"] == "Unknown", ready
