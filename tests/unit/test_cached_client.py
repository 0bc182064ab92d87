"""The cached client: Client's methods and signatures, reads from the cache, the rest live.

On testenv's fake apiserver, counting the gets that reach it: a get of a whole object never does
(the cache answers), a subresource read does; writes in either form (the object, or kind and
name) change the server's objects; a call refused by the shared argument checks reaches nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from reconcile import GVK, CachedClient, Cluster
from reconcile.client.options import Target
from reconcile.objects import Obj
from testenv.fake import FakeClient

ON_LOOP = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
DEPLOYMENT = GVK("apps", "v1", "Deployment")


class CountingFake(FakeClient):
    """The fake, counting the gets that reach it: ``get``, ``get scale``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reads: list[str] = []

    async def _get(self, target: Target, *, metadata_only: bool) -> Obj:
        self.reads.append(f"get {target.subresource}".strip())
        return await super()._get(target, metadata_only=metadata_only)


def _configmap(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "a"}}


def _deployment() -> Obj:
    meta = {"name": "web", "namespace": "a"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {"replicas": 1},
    }


@contextlib.asynccontextmanager
async def cached() -> AsyncIterator[tuple[CachedClient, CountingFake]]:
    fake = CountingFake(objects=[_configmap("one"), _deployment()])
    cluster = Cluster("", client=fake)
    async with anyio.create_task_group() as group:
        await group.start(cluster.cache.run)
        yield cluster.client, fake
        group.cancel_scope.cancel()


@ON_LOOP
async def test_the_cache_answers_object_reads_and_the_server_subresource_reads() -> None:
    async with cached() as (client, fake):
        one = await client.get(CONFIGMAP, "one", namespace="a")
        meta = await client.get(CONFIGMAP, "one", namespace="a", metadata_only=True)
        listed = await client.list_all(CONFIGMAP, namespace="a")
        assert fake.reads == []
        scale = await client.get_scale(DEPLOYMENT, "web", namespace="a")
        assert fake.reads == ["get scale"]
    assert one["metadata"]["name"] == "one"
    assert meta["kind"] == "PartialObjectMetadata"
    assert [item["metadata"]["name"] for item in listed] == ["one"]
    assert scale["spec"]["replicas"] == 1


@ON_LOOP
async def test_writes_in_either_form_reach_the_server() -> None:
    async with cached() as (client, fake):
        created = await client.create(_configmap("two"))
        await client.patch(created, {"data": {"k": "v"}})
        await client.patch(CONFIGMAP, "two", {"data": {"l": "w"}}, namespace="a")
        await client.patch_scale(DEPLOYMENT, "web", {"spec": {"replicas": 3}}, namespace="a")
        await client.delete(CONFIGMAP, "one", namespace="a")
        assert (await fake.get(CONFIGMAP, "two", namespace="a"))["data"] == {"k": "v", "l": "w"}
        assert (await fake.get_scale(DEPLOYMENT, "web", namespace="a"))["spec"]["replicas"] == 3
        assert (await fake.list(CONFIGMAP, namespace="a"))["items"][0]["metadata"]["name"] == "two"


@ON_LOOP
async def test_the_shared_checks_refuse_before_any_request() -> None:
    async with cached() as (client, fake):
        with pytest.raises(ValueError, match="force is only valid"):
            await client.patch(CONFIGMAP, "one", {}, namespace="a", force=True)
        with pytest.raises(ValueError, match="needs a namespace"):
            await client.delete_all_of(CONFIGMAP)
        with pytest.raises(ValueError, match=r"metadata\.namespace is required"):
            await client.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
            )
        assert fake.reads == []
        applied = await client.apply(_configmap("three"))
    assert applied["metadata"]["name"] == "three"
