"""Member connections against a real host: what a Cluster may make the controller-manager do.

A plain-HTTP listener on 127.0.0.1 stands in for an attacker's endpoint: a Cluster pointing at it
is refused and the listener hears nothing, while the same Cluster under
``allow_insecure_endpoints`` does send the token there (so the listener would have caught it).
Secret references outside the cluster namespace and tokens that are not UTF-8 are refused with a
reason in Ready and a ``MemberConfigInvalid`` Event.
"""

from __future__ import annotations

import base64
import contextlib
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
import pytest_asyncio
from anyio.abc import SocketStream

from controllers.api import CLUSTER_GVK, READY_CONDITION
from controllers.cluster import (
    ClusterProvider,
    ClusterStatusOptions,
    MemberOptions,
    Members,
    setup_cluster_controller,
    setup_cluster_status_controller,
)
from controllers.cluster.binding import owner_reference
from reconcile import (
    EVENT_GVK,
    GVK,
    AlreadyExists,
    Client,
    ClusterConfig,
    Manager,
    ManagerOptions,
    NotFound,
    Obj,
    get_condition,
)
from testenv import ControlPlane, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

SECRET = GVK("", "v1", "Secret")
NAMESPACE = GVK("", "v1", "Namespace")
FAST = ClusterStatusOptions(update_frequency=0.5, failure_threshold=0, success_threshold=0)


@pytest_asyncio.fixture(loop_scope="session")
async def host_client(karmada_client: Client) -> Client:
    """The host's admin client, with the namespace Cluster Secrets live in."""
    with contextlib.suppress(AlreadyExists):
        await karmada_client.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "karmada-cluster"}}
        )
    return karmada_client


class Listener:
    """A plain-TCP server on 127.0.0.1 that keeps whatever any client sends it."""

    def __init__(self) -> None:
        self.received = b""
        self.connections = 0
        self.port = 0

    async def _serve(self, stream: SocketStream) -> None:
        self.connections += 1
        async with stream:
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                with anyio.move_on_after(2):
                    while b"\r\n\r\n" not in self.received:
                        self.received += await stream.receive()
                await stream.send(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")


@asynccontextmanager
async def listening() -> AsyncIterator[Listener]:
    listener = Listener()
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    listener.port = tcp.extra(anyio.abc.SocketAttribute.local_port)
    async with tcp, anyio.create_task_group() as group:
        group.start_soon(tcp.serve, listener._serve)
        yield listener
        group.cancel_scope.cancel()


@asynccontextmanager
async def cluster_controllers(
    host: ControlPlane, options: MemberOptions | None = None
) -> AsyncIterator[Members[ClusterProvider]]:
    config = await ClusterConfig.from_kubeconfig(
        host.kubeconfig, temp_dir=host.directory / "client"
    )
    manager = Manager(config, options=ManagerOptions(metrics_bind_address="0"))
    registry = Members.of(manager, temp_dir=host.directory / "client", options=options)
    setup_cluster_controller(manager, registry)
    setup_cluster_status_controller(manager, registry, FAST)
    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        yield registry
        manager.stop()


def a_secret(name: str, namespace: str, token: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "data": {"token": base64.b64encode(token).decode()},
    }


async def bind(client: Client, name: str) -> None:
    """Bind Secret karmada-cluster/NAME to Cluster NAME, as join does (the registry uses only a
    Secret bound to its Cluster)."""
    uid = (await client.get(CLUSTER_GVK, name))["metadata"]["uid"]
    owners = {"metadata": {"ownerReferences": [owner_reference(name, uid)]}}
    await client.patch(SECRET, name, owners, namespace="karmada-cluster")


def a_cluster(name: str, endpoint: str, secret_namespace: str = "karmada-cluster") -> Obj:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {
            "apiEndpoint": endpoint,
            "syncMode": "Push",
            "secretRef": {"namespace": secret_namespace, "name": name},
        },
    }


async def ready_reason(client: Client, name: str, reason: str) -> dict[str, Any]:
    async def matches() -> dict[str, Any] | None:
        condition = get_condition(await client.get(CLUSTER_GVK, name), READY_CONDITION)
        return dict(condition) if condition and condition.get("reason") == reason else None

    return await eventually(matches, timeout=30, interval=0.2)


async def config_warning(client: Client, name: str, words: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        events = await client.list(
            EVENT_GVK, namespace="default", field_selector=f"involvedObject.name={name}"
        )
        for event in events["items"]:
            if event["reason"] == "MemberConfigInvalid" and words in event["message"]:
                return dict(event)
        return None

    return await eventually(found, timeout=30, interval=0.2)


async def delete_cluster(client: Client, name: str) -> None:
    """Delete while the controllers run (they release the finalizer), and wait until gone."""
    with contextlib.suppress(NotFound):
        await client.delete(CLUSTER_GVK, name)

    async def gone() -> bool:
        try:
            await client.get(CLUSTER_GVK, name)
        except NotFound:
            return True
        return False

    await eventually(gone, timeout=30, interval=0.2)


async def test_an_http_endpoint_is_refused_and_the_token_never_leaves(
    host: ControlPlane, host_client: Client
) -> None:
    name = f"plain-{secrets.token_hex(3)}"
    canary = f"canary-{secrets.token_hex(8)}".encode()
    await host_client.create(a_secret(name, "karmada-cluster", canary))
    async with listening() as listener:
        endpoint = f"http://127.0.0.1:{listener.port}"
        await host_client.create(a_cluster(name, endpoint))
        await bind(host_client, name)
        try:
            async with cluster_controllers(host):
                condition = await ready_reason(host_client, name, "InsecureEndpoint")
                assert condition["status"] == "False"
                assert f"spec.apiEndpoint '{endpoint}' is plain HTTP" in condition["message"]
                await config_warning(host_client, name, "plain HTTP")
            assert listener.connections == 0
            assert listener.received == b""

            # The control: allowed explicitly, the same Cluster sends the token in clear text.
            allowed = MemberOptions(allow_insecure_endpoints=True)
            async with cluster_controllers(host, allowed):

                async def token_arrived() -> bool:
                    return canary in listener.received

                await eventually(token_arrived, timeout=30, interval=0.2)
                assert b"authorization: bearer " + canary in listener.received.lower()
                await delete_cluster(host_client, name)
        finally:
            with contextlib.suppress(NotFound):
                await host_client.delete(SECRET, name, namespace="karmada-cluster")


async def test_a_secret_outside_the_cluster_namespace_is_refused(
    host: ControlPlane, host_client: Client, namespace: str
) -> None:
    name = f"foreign-{secrets.token_hex(3)}"
    await host_client.create(a_secret(name, namespace, b"a-token-of-another-namespace"))
    await host_client.create(a_cluster(name, "https://127.0.0.1:1", secret_namespace=namespace))
    async with cluster_controllers(host) as registry:
        condition = await ready_reason(host_client, name, "SecretRefNotAllowed")
        assert condition["status"] == "False"
        expected = (
            f"spec.secretRef names Secret {namespace}/{name}: Secrets of Clusters are read only "
            "from namespace karmada-cluster"
        )
        assert expected in condition["message"]
        await config_warning(host_client, name, expected)
        assert registry.get(name) is None
        await delete_cluster(host_client, name)


async def test_a_non_utf8_token_is_member_config_invalid_until_fixed(
    host: ControlPlane, host_client: Client
) -> None:
    name = f"binary-{secrets.token_hex(3)}"
    await host_client.create(a_secret(name, "karmada-cluster", b"\xff\xfe\x00token"))
    await host_client.create(a_cluster(name, "127.0.0.1:1"))
    await bind(host_client, name)
    try:
        async with cluster_controllers(host) as registry:
            condition = await ready_reason(host_client, name, "InvalidSecret")
            words = f"Secret karmada-cluster/{name}: data.token is not UTF-8 text"
            assert words in condition["message"]
            await config_warning(host_client, name, words)
            assert registry.get(name) is None

            await host_client.update(a_secret(name, "karmada-cluster", b"now-a-usable-token"))
            await bind(host_client, name)
            # Connected (host:port means https://), so now it is the probe that fails.
            condition = await ready_reason(host_client, name, "ClusterNotReachable")
            member = registry.get(name)
            assert member is not None
            assert member.api_reader.config.host == "https://127.0.0.1:1"
            await delete_cluster(host_client, name)
    finally:
        with contextlib.suppress(NotFound):
            await host_client.delete(SECRET, name, namespace="karmada-cluster")
