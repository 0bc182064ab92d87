"""Joining members and the cluster controllers, against a real host and real members."""

from __future__ import annotations

import base64
import contextlib
import secrets
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import orjson
import pytest
import pytest_asyncio

from controllers.api import CLUSTER_GVK
from controllers.cluster import (
    ClusterProvider,
    ClusterStatusOptions,
    Members,
    setup_cluster_controller,
    setup_cluster_status_controller,
)
from controllers.join import TOKEN_SECONDS, join_cluster, refresh_token
from reconcile import (
    EVENT_GVK,
    GVK,
    Client,
    ClusterConfig,
    NotFound,
    get_condition,
)
from testenv import ControlPlane, Environment, eventually, manager_for, running
from testenv.binaries import find_binaries
from tests.builders import delete_and_wait, get_or_none

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
    manager = await manager_for(host, metrics_bind_address="0")
    registry = Members.of(manager, temp_dir=host.directory / "client")
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
    manager = await manager_for(host, metrics_bind_address="0")
    registry = Members.of(manager)
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


# -- token expiry (#26 item 7) ------------------------------------------------------------------


def _claims(token_b64: str) -> dict[str, Any]:
    payload = base64.b64decode(token_b64).decode().split(".")[1]
    claims: dict[str, Any] = orjson.loads(base64.urlsafe_b64decode(payload + "=" * 4))
    return claims


async def _expiring(client: Client, name: str, status: str, reason: str) -> dict[str, Any]:
    async def matches() -> dict[str, Any] | None:
        condition = get_condition(await client.get(CLUSTER_GVK, name), "TokenExpiring")
        if condition is None or (condition["status"], condition["reason"]) != (status, reason):
            return None
        return dict(condition)

    return await eventually(matches, timeout=30, interval=0.2)


async def _warned(client: Client, name: str, reason: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        selector = f"involvedObject.name={name}"
        listed = await client.list(EVENT_GVK, namespace="default", field_selector=selector)
        return next((e for e in listed["items"] if e["reason"] == reason), None)

    return await eventually(found, timeout=30, interval=0.2)


async def _join_cli(host: ControlPlane, *argv: str) -> tuple[int, str, str]:
    done = await anyio.run_process(
        [
            sys.executable,
            "-m",
            "controllers.cli",
            "join",
            *argv,
            "--kubeconfig",
            str(host.kubeconfig),
        ],
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@contextlib.asynccontextmanager
async def _controllers(host: ControlPlane) -> AsyncIterator[Members[ClusterProvider]]:
    manager = await manager_for(host, metrics_bind_address="0")
    registry = Members.of(manager, temp_dir=host.directory / "client")
    setup_cluster_controller(manager, registry)
    setup_cluster_status_controller(manager, registry, ClusterStatusOptions(0.5, 0, 0))
    async with running(manager):
        yield registry


async def test_a_short_token_is_flagged_before_it_lapses_and_join_refresh_renews_it(
    multicluster: Environment, host_client: Client
) -> None:
    """The member's minimum lifetime (10 minutes) is within the warning window at once."""
    member, host = multicluster.members["member1"], multicluster.host
    name = f"short-{secrets.token_hex(3)}"
    kubeconfig = str(member.kubeconfig)
    result = await join_cluster(
        name, host=host_client, member_kubeconfig=kubeconfig, token_seconds=600
    )
    assert result.expires, "the TokenRequest's status.expirationTimestamp"
    assert not result.capped
    before = (await host_client.get(SECRET, name, namespace="karmada-cluster"))["data"]["token"]
    claims = _claims(before)
    assert claims["exp"] - claims["iat"] == 600
    try:
        async with _controllers(host):
            condition = await _expiring(host_client, name, "True", "TokenExpiresSoon")
            assert "reconcile join NAME --refresh" in condition["message"]
            event = await _warned(host_client, name, "TokenExpiresSoon")
            assert event["type"] == "Warning"
            assert await eventually(lambda: _ready(host_client, name), timeout=30)

            status, out, err = await _join_cli(
                host, name, "--refresh", "--cluster-kubeconfig", kubeconfig
            )
            assert (status, err) == (0, ""), err
            assert out.startswith(f"token renewed: cluster {name}: ")
            assert "token expires " in out

            condition = await _expiring(host_client, name, "False", "TokenValid")
            secret = await host_client.get(SECRET, name, namespace="karmada-cluster")
            assert secret["data"]["token"] != before
            renewed = _claims(secret["data"]["token"])
            assert renewed["exp"] - renewed["iat"] == TOKEN_SECONDS
            owner = secret["metadata"]["ownerReferences"]
            uid = (await host_client.get(CLUSTER_GVK, name))["metadata"]["uid"]
            assert [(o["name"], o["uid"], o["controller"]) for o in owner] == [(name, uid, True)]
            await eventually(lambda: _ready(host_client, name), timeout=30)
            await delete_and_wait(host_client, CLUSTER_GVK, name)
    finally:
        with contextlib.suppress(NotFound):
            await host_client.delete(SECRET, name, namespace="karmada-cluster")


@pytest_asyncio.fixture(loop_scope="session")
async def capping_member() -> AsyncIterator[ControlPlane]:
    """A cluster of its own whose apiserver caps service-account tokens to an hour (the least
    kube-apiserver accepts for --service-account-max-token-expiration)."""
    flags = {"service-account-max-token-expiration": "1h"}
    async with Environment(apiserver_flags=flags, binaries=find_binaries()) as env:
        yield env.host


async def test_a_member_capping_token_lifetimes_is_reported_by_join_and_on_the_cluster(
    multicluster: Environment, host_client: Client, capping_member: ControlPlane
) -> None:
    name = f"capped-{secrets.token_hex(3)}"
    kubeconfig = str(capping_member.kubeconfig)
    result = await join_cluster(name, host=host_client, member_kubeconfig=kubeconfig)
    assert result.capped, "asked for a year, granted an hour"
    assert "the member caps token lifetimes" in result.summary()
    secret = await host_client.get(SECRET, name, namespace="karmada-cluster")
    claims = _claims(secret["data"]["token"])
    assert claims["exp"] - claims["iat"] == 3600
    try:
        async with _controllers(multicluster.host):
            condition = await _expiring(host_client, name, "True", "TokenExpiresSoon")
            assert "is in its last 7 days" in condition["message"]
            await _warned(host_client, name, "TokenExpiresSoon")
            await eventually(lambda: _ready(host_client, name), timeout=30)
            renewed = await refresh_token(name, host=host_client, member_kubeconfig=kubeconfig)
            assert renewed.capped
            assert renewed.expires >= result.expires
            await delete_and_wait(host_client, CLUSTER_GVK, name)
    finally:
        with contextlib.suppress(NotFound):
            await host_client.delete(SECRET, name, namespace="karmada-cluster")
