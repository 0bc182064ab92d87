"""Scoped caches and metadata-only informers against the real kube-apiserver.

The apiserver answers metadata-only lists and watches (``Accept: ...;as=PartialObjectMetadata``)
with objects that have no data; a label-scoped kind read through the cached client uses its one
informer and refuses reads outside the scope; a user allowed to list and watch in one namespace
only can run a cache scoped to it, where a cluster-wide informer would be refused (403).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import pytest_asyncio

from controllers.execution.source import MANAGED_SELECTOR, managed_informer
from reconcile import (
    GVK,
    ByObject,
    CacheOptions,
    CacheSyncError,
    Client,
    Cluster,
    ClusterConfig,
    Forbidden,
    NotFound,
    ScopeError,
)
from reconcile.objects import Obj
from testenv import ControlPlane, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
MANAGED = dict([MANAGED_SELECTOR.split("=")])


async def _client(kubeconfig: Path, scratch: Path) -> Client:
    config = await ClusterConfig.from_kubeconfig(kubeconfig, temp_dir=scratch)
    return Client(config, qps=500, burst=1000)


@pytest_asyncio.fixture(loop_scope="session")
async def client(host: ControlPlane) -> AsyncIterator[Client]:
    async with await _client(host.kubeconfig, host.directory / "client") as live:
        yield live


def _cm(name: str, namespace: str, labels: dict[str, str] | None = None, **data: str) -> Obj:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


@contextlib.asynccontextmanager
async def running(cluster: Cluster) -> AsyncIterator[Cluster]:
    """``cluster`` with its cache running."""
    async with anyio.create_task_group() as group:
        await group.start(cluster.run)
        yield cluster
        group.cancel_scope.cancel()


async def test_the_apiserver_answers_metadata_only_lists_and_watches(
    client: Client, namespace: str
) -> None:
    await client.create(_cm("one", namespace, {"a": "1"}, payload="p" * 2000))
    listing = await client.list(CONFIGMAP, namespace=namespace, metadata_only=True)
    assert listing["kind"] == "PartialObjectMetadataList"
    (item,) = listing["items"]
    assert item["kind"] == "PartialObjectMetadata"
    assert "data" not in item
    assert item["metadata"]["labels"] == {"a": "1"}
    version = listing["metadata"]["resourceVersion"]
    await client.create(_cm("two", namespace, payload="q" * 2000))
    async with client.watch(
        CONFIGMAP, namespace=namespace, resource_version=version, metadata_only=True
    ) as events:
        async for event in events:  # raw from the server: nothing converted them
            if event["type"] == "ADDED":
                assert event["object"]["apiVersion"] == "meta.k8s.io/v1"
                assert event["object"]["kind"] == "PartialObjectMetadata"
                assert event["object"]["metadata"]["name"] == "two"
                assert "data" not in event["object"]
                break


async def test_a_metadata_only_informer_caches_no_data(host: ControlPlane, namespace: str) -> None:
    options = CacheOptions(default_namespaces=(namespace,))
    config = await ClusterConfig.from_kubeconfig(host.kubeconfig, temp_dir=host.directory / "c")
    async with running(Cluster("", config, cache_options=options)) as cluster:
        await cluster.api_reader.create(_cm("before", namespace, payload="x" * 2000))
        listing = await cluster.client.list(CONFIGMAP, metadata_only=True)
        assert [i["metadata"]["name"] for i in listing["items"]] == ["before"]
        await cluster.api_reader.create(_cm("after", namespace, {"l": "v"}, payload="y" * 2000))

        async def arrived() -> Obj | None:
            with contextlib.suppress(NotFound):
                return await cluster.client.get(
                    CONFIGMAP, "after", namespace=namespace, metadata_only=True
                )
            return None

        after = await eventually(arrived)
        assert set(after) == {"apiVersion", "kind", "metadata"}
        assert after["metadata"]["labels"] == {"l": "v"}
        (informer,) = cluster.cache.informers().values()
        stored = informer.indexer.values()
        assert len(stored) == 2
        assert all("data" not in obj and "managedFields" not in obj["metadata"] for obj in stored)


async def test_a_label_scoped_kind_has_one_informer_and_refuses_wider_reads(
    host: ControlPlane, namespace: str
) -> None:
    config = await ClusterConfig.from_kubeconfig(host.kubeconfig, temp_dir=host.directory / "c")
    async with running(Cluster("m", config)) as member:
        await member.api_reader.create(_cm("managed", namespace, MANAGED, k="v"))
        await member.api_reader.create(_cm("plain", namespace, k="v"))
        informer = managed_informer(member.cache, CONFIGMAP)

        async def cached() -> Obj | None:
            with contextlib.suppress(NotFound):
                return await member.client.get(CONFIGMAP, "managed", namespace=namespace)
            return None

        assert (await eventually(cached))["data"] == {"k": "v"}
        with pytest.raises(NotFound):  # outside the selection: never cached
            await member.client.get(CONFIGMAP, "plain", namespace=namespace)
        with pytest.raises(ScopeError, match="include it in the selector"):
            await member.client.list(CONFIGMAP, namespace=namespace)
        scoped = await member.client.list(
            CONFIGMAP, namespace=namespace, label_selector=MANAGED_SELECTOR
        )
        assert [i["metadata"]["name"] for i in scoped["items"]] == ["managed"]
        assert list(member.cache.informers().values()) == [informer]


async def _grant_namespace_reader(client: Client, namespace: str, user: str) -> None:
    rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
    meta = {"name": "configmap-reader", "namespace": namespace}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta}
    await client.create({**role, "rules": [rule]})
    await client.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": meta["name"],
            },
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }
    )


async def test_a_user_allowed_in_one_namespace_runs_a_cache_scoped_to_it(
    host: ControlPlane, client: Client, namespace: str
) -> None:
    user = await host.add_user(f"one-namespace-{secrets.token_hex(3)}")
    await _grant_namespace_reader(client, namespace, user.name)
    await client.create(_cm("visible", namespace, k="v"))
    scratch = host.directory / "scoped-user"
    # Cluster-wide, the same user's informer is refused: this is why the scope matters.
    async with await _client(user.kubeconfig, scratch) as denied:
        with pytest.raises(Forbidden):
            await denied.list(CONFIGMAP)
    config = await ClusterConfig.from_kubeconfig(user.kubeconfig, temp_dir=scratch)
    options = CacheOptions(by_object={CONFIGMAP: ByObject(namespaces=(namespace,))})
    async with running(Cluster("", config, cache_options=options, sync_timeout=20)) as cluster:

        async def cached() -> Obj | None:
            with contextlib.suppress(NotFound):
                return await cluster.client.get(CONFIGMAP, "visible", namespace=namespace)
            return None

        assert (await eventually(cached))["data"] == {"k": "v"}
        with pytest.raises(ScopeError, match="unknown namespace for the cache"):
            await cluster.client.get(CONFIGMAP, "x", namespace="kube-system")
        await cluster.wait_for_cache_sync(5)  # no informer was opened beyond the namespace
        assert [str(s.namespace) for s in cluster.cache.informers()] == [namespace]
    unscoped_config = await ClusterConfig.from_kubeconfig(user.kubeconfig, temp_dir=scratch)
    async with running(Cluster("", unscoped_config, sync_timeout=20)) as unscoped:
        with pytest.raises(CacheSyncError, match="forbidden"):
            await unscoped.client.get(CONFIGMAP, "visible", namespace=namespace)
