"""Cache options by object: each kind is cached in its configured scope, and reads keep to it.

On testenv's fake apiserver: one informer per kind and namespace of its scope, shared by sources
and reads (a read never opens a second, wider informer); reads outside the scope are refused with
ScopeError; metadata-only informers hold PartialObjectMetadata; ``configure`` scopes a kind before
its first informer and only then.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from controllers.execution.source import MANAGED_SELECTOR, managed_informer
from reconcile import (
    GVK,
    BuilderError,
    ByObject,
    CacheOptions,
    Cluster,
    EnqueueRequestForObject,
    Kind,
    Manager,
    ManagerOptions,
    Request,
    ScopeError,
    WorkQueue,
    as_partial_object_metadata,
    controller_managed_by,
)
from reconcile.cache.options import KindScope
from reconcile.objects import Obj
from testenv import eventually
from testenv.fake import FakeClient

ON_LOOP = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
NAMESPACE = GVK("", "v1", "Namespace")
REPLICASET = GVK("apps", "v1", "ReplicaSet")
SECRET = GVK("", "v1", "Secret")
MANAGED = dict([MANAGED_SELECTOR.split("=")])


def _cm(name: str, namespace: str, labels: dict[str, str] | None = None, **data: str) -> Obj:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def _replicaset() -> Obj:
    labels = {"app": "web"}
    spec = {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}}}
    meta = {"name": "web", "namespace": "demo"}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta, "spec": spec}


def _objects() -> list[Obj]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
        _cm("managed", "a", MANAGED, big="x" * 1000),
        _cm("plain", "a", big="y" * 1000),
        _cm("other", "b", MANAGED),
        _cm("third", "c"),
    ]


@contextlib.asynccontextmanager
async def running(options: CacheOptions | None = None) -> AsyncIterator[Cluster]:
    """A running Cluster over a fake apiserver holding ``_objects()``."""
    cluster = Cluster("", client=FakeClient(objects=_objects()), cache_options=options)
    async with anyio.create_task_group() as group:
        await group.start(cluster.cache.run)
        yield cluster
        group.cancel_scope.cancel()


def _names(listing: Obj) -> list[str]:
    return [item["metadata"]["name"] for item in listing["items"]]


@ON_LOOP
async def test_a_read_of_a_label_scoped_kind_uses_its_informer() -> None:
    # Before: managed_informer opened the label-scoped informer, and the cached client's read
    # opened a second, cluster-wide one holding every ConfigMap.
    async with running() as member:
        informer = managed_informer(member.cache, CONFIGMAP)
        found = await member.client.get(CONFIGMAP, "managed", namespace="a")
        assert found["data"]["big"] == "x" * 1000
        listing = await member.client.list(CONFIGMAP, label_selector=MANAGED_SELECTOR)
        assert sorted(_names(listing)) == ["managed", "other"]
        assert list(member.cache.informers().values()) == [informer]
        assert len(informer.indexer) == 2


@ON_LOOP
async def test_reads_outside_the_label_scope_are_refused_or_not_found() -> None:
    async with running() as member:
        managed_informer(member.cache, CONFIGMAP)
        with pytest.raises(
            ScopeError, match=re.escape("holds only those matching 'karmada.io/managed")
        ):
            await member.client.list(CONFIGMAP, namespace="a")
        with pytest.raises(ScopeError):
            await member.client.list(CONFIGMAP, label_selector="karmada.io/managed in (true,x)")
        narrower = await member.client.list(
            CONFIGMAP, label_selector=f"{MANAGED_SELECTOR},absent!=1", namespace="a"
        )
        assert _names(narrower) == ["managed"]
        with pytest.raises(Exception, match="not found"):  # held by no informer: NotFound
            await member.client.get(CONFIGMAP, "plain", namespace="a")
        assert len(member.cache.informers()) == 1


@ON_LOOP
async def test_namespaces_scope_one_informer_each_and_refuse_other_namespaces() -> None:
    options = CacheOptions(by_object={CONFIGMAP: ByObject(namespaces=("a", "b"))})
    async with running(options) as cluster:
        listing = await cluster.client.list(CONFIGMAP)
        assert sorted(_names(listing)) == ["managed", "other", "plain"]
        assert _names(await cluster.client.list(CONFIGMAP, namespace="b")) == ["other"]
        with pytest.raises(ScopeError, match="unable to get: c/third because of unknown namespace"):
            await cluster.client.get(CONFIGMAP, "third", namespace="c")
        with pytest.raises(ScopeError, match="unable to list: c because of unknown namespace"):
            await cluster.client.list(CONFIGMAP, namespace="c")
        namespaces = sorted(str(scope.namespace) for scope in cluster.cache.informers())
        assert namespaces == ["a", "b"]
        with pytest.raises(ScopeError, match="name one"):
            cluster.cache.get_informer(CONFIGMAP)


@ON_LOOP
async def test_a_kind_source_watches_every_namespace_of_its_scope() -> None:
    options = CacheOptions(default_namespaces=("a", "b"))
    async with running(options) as cluster, anyio.create_task_group() as group:
        queue: WorkQueue[Request] = WorkQueue()
        source = Kind(cluster.cache, CONFIGMAP, EnqueueRequestForObject())
        await source.start(queue, group)
        await source.wait_for_sync(5)
        assert len(queue) == 3
        await cluster.api_reader.create(_cm("late", "b"))

        async def enqueued() -> bool:
            return len(queue) == 4

        await eventually(enqueued)
        # A cluster-scoped kind under namespaced defaults: one answer per object, not per informer.
        assert _names(await cluster.client.list(NAMESPACE)).count("a") == 1
        group.cancel_scope.cancel()


@ON_LOOP
async def test_metadata_only_informers_hold_partial_object_metadata() -> None:
    async with running() as cluster:
        cm = await cluster.client.get(CONFIGMAP, "managed", namespace="a", metadata_only=True)
        assert cm["apiVersion"] == "meta.k8s.io/v1"
        assert cm["kind"] == "PartialObjectMetadata"
        assert set(cm) == {"apiVersion", "kind", "metadata"}
        assert cm["metadata"]["labels"] == MANAGED
        listing = await cluster.client.list(CONFIGMAP, metadata_only=True, namespace="a")
        assert listing["kind"] == "PartialObjectMetadataList"
        assert all("data" not in item for item in listing["items"])
        (informer,) = cluster.cache.informers().values()
        assert all("data" not in obj for obj in informer.indexer.values())
        # The full view is another informer; it has the data.
        full = await cluster.client.get(CONFIGMAP, "managed", namespace="a")
        assert full["data"]["big"] == "x" * 1000
        assert sorted(s.metadata_only for s in cluster.cache.informers()) == [False, True]


@ON_LOOP
async def test_metadata_only_watch_events_carry_no_data() -> None:
    async with running() as cluster:
        informer = cluster.cache.get_informer(CONFIGMAP, metadata_only=True)
        await cluster.cache.wait_for_informer(informer, 5)
        await cluster.api_reader.create(_cm("new", "a", {"fresh": "1"}, secret="s3cr3t"))

        async def arrived() -> bool:
            return informer.indexer.get("a/new") is not None

        await eventually(arrived)
        stored = informer.indexer.get("a/new")
        assert stored is not None
        assert stored["kind"] == "PartialObjectMetadata"
        assert stored["metadata"]["labels"] == {"fresh": "1"}
        assert "s3cr3t" not in str(stored)


@ON_LOOP
async def test_configure_before_the_first_informer_only() -> None:
    async with running() as cluster:
        scope = ByObject(label_selector="app=x")
        cluster.cache.configure(CONFIGMAP, scope)
        cluster.cache.configure(CONFIGMAP, ByObject(label_selector="app=x"))  # the same: no-op
        with pytest.raises(ValueError, match="scoped already"):
            cluster.cache.configure(CONFIGMAP, ByObject(label_selector="app=y"))
        await cluster.client.list(NAMESPACE)
        with pytest.raises(ValueError, match="before being scoped"):
            cluster.cache.configure(NAMESPACE, ByObject(label_selector="app=x"))


def test_by_object_overrides_the_defaults_field_by_field() -> None:
    options = CacheOptions(
        by_object={CONFIGMAP: ByObject(label_selector="app=x")},
        default_namespaces=("a",),
        default_field_selector="metadata.name!=skip",
    )
    scope = options.scope_of(CONFIGMAP)
    assert (scope.namespaces, scope.label_selector, scope.field_selector) == (
        ("a",),
        "app=x",
        "metadata.name!=skip",
    )
    everywhere = CacheOptions(
        by_object={CONFIGMAP: ByObject(namespaces=("",))}, default_namespaces=("a",)
    )
    assert everywhere.scope_of(CONFIGMAP).namespaces is None
    assert everywhere.scope_of(NAMESPACE).namespaces == ("a",)


@pytest.mark.parametrize(
    ("read", "scope", "allowed"),
    [
        ("app=x", "app=x", True),
        ("app=x,tier=db", "app=x", True),
        ("app in (x)", "app in (x,y)", True),
        ("app in (x,z)", "app in (x,y)", False),
        ("app=x", "app", True),
        ("app", "app=x", False),
        ("app=z", "app!=x", True),
        ("app=x", "app notin (x,y)", False),
        ("app notin (x,y,z)", "app notin (x,y)", True),
        ("!app", "!app", True),
        ("", "app=x", False),
        (None, "app=x", False),
        ("tier=x", "app=x", False),
    ],
)
def test_a_list_selector_must_imply_the_scope(read: str | None, scope: str, allowed: bool) -> None:
    kind = KindScope(CONFIGMAP, None, scope, None, None)
    if allowed:
        kind.check_list(read, None)
    else:
        with pytest.raises(ScopeError):
            kind.check_list(read, None)


def test_a_list_field_selector_must_hold_the_scope_clauses() -> None:
    kind = KindScope(CONFIGMAP, None, None, "status.phase!=Done", None)
    kind.check_list(None, "status.phase != Done,metadata.name=x")
    with pytest.raises(ScopeError, match=re.escape("status.phase!=Done")):
        kind.check_list(None, "metadata.name=x")


def test_partial_object_metadata_keeps_the_metadata_only() -> None:
    cm = _cm("x", "a", {"l": "1"}, k="v")
    partial = as_partial_object_metadata(cm)
    assert partial == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": cm["metadata"],
    }
    assert as_partial_object_metadata(partial) == partial


@ON_LOOP
async def test_builder_owns_and_watches_metadata_only() -> None:
    fake = FakeClient()
    manager = Manager(client=fake, options=ManagerOptions(metrics_bind_address="0"))
    seen: list[tuple[str, list[Obj]]] = []

    async def reconcile(request: Request) -> None:
        owned = await manager.client.list(CONFIGMAP, namespace="demo", metadata_only=True)
        seen.append((request.name, owned["items"]))

    (
        controller_managed_by(manager)
        .for_(REPLICASET)
        .owns(CONFIGMAP, metadata_only=True)
        .watches(SECRET, EnqueueRequestForObject(), metadata_only=True)
        .complete(reconcile)
    )
    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        owner = await fake.create(_replicaset())
        uid = owner["metadata"]["uid"]
        reference = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": uid}
        reference["controller"] = True
        child = _cm("child", "demo", payload="p")
        child["metadata"]["ownerReferences"] = [reference]
        await fake.create(child)

        async def reconciled_with_child() -> bool:
            return any(items and items[0]["metadata"]["name"] == "child" for _, items in seen)

        await eventually(reconciled_with_child)
        assert all("data" not in item for _, items in seen for item in items)
        secret = {"apiVersion": "v1", "kind": "Secret", "data": {"k": "dg=="}}
        await fake.create({**secret, "metadata": {"name": "s", "namespace": "demo"}})

        async def secret_reconciled() -> bool:
            return any(name == "s" for name, _ in seen)

        await eventually(secret_reconciled)
        views = {(s.gvk.kind, s.metadata_only) for s in manager.cache.informers()}
        assert views == {("ReplicaSet", False), ("ConfigMap", True), ("Secret", True)}
        (secrets,) = [i for s, i in manager.cache.informers().items() if s.gvk == SECRET]
        assert all("data" not in obj for obj in secrets.indexer.values())
        manager.stop()


def test_watches_of_a_source_cannot_be_metadata_only() -> None:
    manager = Manager(client=FakeClient(), options=ManagerOptions(metrics_bind_address="0"))
    source = Kind(manager.cache, CONFIGMAP, EnqueueRequestForObject())
    builder = controller_managed_by(manager).named("x").watches(source, metadata_only=True)

    async def reconcile(request: Request) -> None:
        return None

    with pytest.raises(BuilderError, match="needs a kind"):
        builder.complete(reconcile)
