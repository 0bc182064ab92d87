"""Joining members and the cluster controllers, against a real host and real members."""

from __future__ import annotations

import base64
import secrets
from typing import Any

import pytest

from controllers.api import CLUSTER_GVK
from controllers.cluster import (
    ClusterStatusOptions,
    MemberRegistry,
    setup_cluster_controller,
    setup_cluster_status_controller,
)
from controllers.join import join_cluster
from reconcile import (
    GVK,
    Client,
    ClusterConfig,
    get_condition,
)
from testenv import Environment, eventually
from tests.builders import delete_and_wait, get_or_none, manager_of, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

NAMESPACE = GVK("", "v1", "Namespace")
SECRET = GVK("", "v1", "Secret")
SERVICE_ACCOUNT = GVK("", "v1", "ServiceAccount")


@pytest.fixture
def host_client(multicluster: Environment, karmada_client: Client) -> Client:
    """The host's admin client, with the members started."""
    return karmada_client


async def _ready(client: Client, name: str) -> dict[str, Any] | None:
    cluster = await get_or_none(client, CLUSTER_GVK, name)
    if cluster is None:
        return None
    condition = get_condition(cluster, "Ready")
    return cluster if condition and condition.get("status") == "True" else None


async def test_join_then_the_controllers_connect_with_the_token_and_report_status(
    multicluster: Environment, host_client: Client
) -> None:
    member = multicluster.members["member1"]
    # A name of this test's own: a Cluster "member1" that other tests of the session joined may
    # already be Ready, and the first Ready wait below must see what this test's manager wrote.
    name = f"joined-{secrets.token_hex(3)}"
    result = await join_cluster(name, host=host_client, member_kubeconfig=str(member.kubeconfig))
    assert result.endpoint == member.url
    secret = await host_client.get(SECRET, name, namespace="karmada-cluster")
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert token.count(".") == 2, "a JWT from the TokenRequest API"
    assert base64.b64decode(secret["data"]["caBundle"]).startswith(b"-----BEGIN CERTIFICATE")
    config = await ClusterConfig.from_kubeconfig(
        member.kubeconfig, temp_dir=member.directory / "client"
    )
    async with Client(config) as member_client:
        await member_client.get(SERVICE_ACCOUNT, f"karmada-{name}", namespace="karmada-cluster")
    # Joining again is harmless and refreshes the token.
    await join_cluster(name, host=host_client, member_kubeconfig=str(member.kubeconfig))

    host = multicluster.host
    manager = await manager_of(host, metrics_bind_address="0")
    registry = MemberRegistry(manager, scratch=host.directory / "client")
    setup_cluster_controller(manager, registry)
    setup_cluster_status_controller(manager, registry, ClusterStatusOptions(0.5, 0, 0))
    async with running(manager):
        cluster = await eventually(lambda: _ready(host_client, name), timeout=30)
        status = cluster["status"]
        assert status["kubernetesVersion"] == await member.server_version()
        apps = next(e for e in status["apiEnablements"] if e["groupVersion"] == "apps/v1")
        assert {"name": "deployments", "kind": "Deployment"} in apps["resources"]
        assert status["nodeSummary"] == {"totalNum": 0, "readyNum": 0}
        assert "karmada.io/cluster-controller" in cluster["metadata"]["finalizers"]
        await host_client.get(NAMESPACE, f"karmada-es-{name}")

        async def registered_member() -> Any:
            return registry.get(name)

        registered = await eventually(registered_member, timeout=30)
        assert registered.api_reader.config.host == member.url

        await member.stop_apiserver()

        async def unreachable() -> bool:
            current = await host_client.get(CLUSTER_GVK, name)
            condition = get_condition(current, "Ready") or {}
            return condition.get("reason") == "ClusterNotReachable"

        try:
            await eventually(unreachable, timeout=30)
        finally:
            await member.start_apiserver()
        await eventually(lambda: _ready(host_client, name), timeout=30)
        # Removed while the controllers run, which release it (finalizer, execution namespace).
        await delete_and_wait(host_client, CLUSTER_GVK, name)


async def test_insecure_clusters_are_refused_with_a_clear_condition(
    multicluster: Environment, host_client: Client
) -> None:
    host = multicluster.host
    await host_client.apply(
        {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": "insecure"},
            "spec": {
                "apiEndpoint": "https://127.0.0.1:1",
                "insecureSkipTLSVerification": True,
                "syncMode": "Push",
            },
        }
    )
    manager = await manager_of(host, metrics_bind_address="0")
    registry = MemberRegistry(manager)
    setup_cluster_controller(manager, registry)
    setup_cluster_status_controller(manager, registry, ClusterStatusOptions(0.5, 0, 0))
    async with running(manager):

        async def refused() -> str | None:
            current = await host_client.get(CLUSTER_GVK, "insecure")
            condition = get_condition(current, "Ready") or {}
            message = str(condition.get("message", ""))
            return message if condition.get("status") == "False" else None

        message = await eventually(refused, timeout=30)
        assert "insecureSkipTLSVerification" in message
        # Deleting the Cluster releases it: no Works, so the finalizer goes at once.
        await delete_and_wait(host_client, CLUSTER_GVK, "insecure")
