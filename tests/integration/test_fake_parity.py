"""Fake parity: what the controllers rely on from the apiserver, asserted of testenv's fake and of
a real kube-apiserver alike.

Unit tests run the controllers on ``testenv.fake``; each behaviour here is one they depend on
(an informer scoped by label forgets an object that leaves the selection; a no-op write changes
nothing; an expired continue token is a 410; a stale Lease update conflicts; a deleting object
takes no new finalizer). Every test runs twice, ids ``fake`` and ``host``: if only the fake
passes, the fake is wrong and hides a bug.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
import pytest_asyncio

from reconcile import Client, Conflict, Gone, Invalid, NotFound
from reconcile.leaderelection import LEASE, micro_time
from testenv import ControlPlane, Environment, FakeClient
from tests.builders import CONFIGMAP, admin_client, configmap

pytestmark = pytest.mark.asyncio(loop_scope="session")


@dataclass
class Api:
    """One side of the comparison: a client, the namespace to use, and how to compact."""

    client: Client
    namespace: str
    compact: Callable[[], Awaitable[None]]
    """Forget history (etcd compaction) so that old resourceVersions are 410s."""


@pytest_asyncio.fixture(loop_scope="session", params=["fake", "host"])
async def api(request: pytest.FixtureRequest, namespace: str) -> AsyncIterator[Api]:
    if request.param == "fake":
        fake = FakeClient()

        async def forget() -> None:
            fake.compact()

        yield Api(fake, namespace, forget)
        return
    env: Environment = request.getfixturevalue("testenv")

    async def compact() -> None:
        assert env.etcd is not None
        await env.etcd.compact()

    async with await admin_client(env.host) as live:
        yield Api(live, namespace, compact)


async def _next_event(events: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
    with anyio.fail_after(20):
        async for event in events:
            if event["type"] != "BOOKMARK":
                return event
    raise AssertionError("the watch ended without an event")


async def test_a_label_scoped_watch_says_deleted_when_an_object_leaves_the_selection(
    api: Api,
) -> None:
    labelled = configmap("scoped", api.namespace)
    labelled["metadata"]["labels"] = {"managed": "yes"}
    created = await api.client.create(labelled)
    start = created["metadata"]["resourceVersion"]
    async with api.client.watch(
        CONFIGMAP,
        namespace=api.namespace,
        label_selector="managed=yes",
        resource_version=start,
        timeout_seconds=30,
    ) as events:
        await api.client.patch(created, {"metadata": {"labels": {"managed": None}}})
        event = await _next_event(aiter(events))
    assert event["type"] == "DELETED"
    assert event["object"]["metadata"]["name"] == "scoped"
    # The object itself is still there, now without the label.
    still = await api.client.get(CONFIGMAP, "scoped", namespace=api.namespace)
    assert "managed" not in (still["metadata"].get("labels") or {})


async def test_a_no_op_write_keeps_the_resource_version(api: Api) -> None:
    created = await api.client.create(configmap("same", api.namespace, k="v"))
    version = created["metadata"]["resourceVersion"]
    updated = await api.client.update(created)
    patched = await api.client.patch(created, {"data": {"k": "v"}})
    assert updated["metadata"]["resourceVersion"] == version
    assert patched["metadata"]["resourceVersion"] == version
    changed = await api.client.patch(created, {"data": {"k": "w"}})
    assert changed["metadata"]["resourceVersion"] != version


async def test_a_metadata_only_patch_answers_with_the_metadata(api: Api) -> None:
    created = await api.client.create(configmap("meta", api.namespace, k="v"))
    patch = {"metadata": {"labels": {"a": "b"}}}
    answer = await api.client.patch(created, patch, metadata_only=True)
    assert answer["apiVersion"] == "meta.k8s.io/v1"
    assert answer["kind"] == "PartialObjectMetadata"
    assert answer["metadata"]["labels"] == {"a": "b"}
    assert "data" not in answer


async def test_a_metadata_only_get_answers_with_the_metadata(api: Api) -> None:
    created = await api.client.create(configmap("metaget", api.namespace, k="v"))
    answer = await api.client.get(CONFIGMAP, "metaget", namespace=api.namespace, metadata_only=True)
    assert answer["apiVersion"] == "meta.k8s.io/v1"
    assert answer["kind"] == "PartialObjectMetadata"
    assert answer["metadata"]["uid"] == created["metadata"]["uid"]
    assert "data" not in answer


async def test_an_expired_continue_token_is_410(api: Api, restartable: ControlPlane) -> None:
    client: Client = api.client
    namespace, restart = api.namespace, None
    if not isinstance(client, FakeClient):
        # The real apiserver serves continue tokens from its watch cache's snapshots (Kubernetes
        # 1.33+, ListFromCacheSnapshot), which etcd compaction does not drop: only an apiserver
        # started after the compaction, whose cache holds no snapshot that old, reads the token
        # from etcd. Restarted on a cluster of its own, so no other test is disturbed.
        client = await admin_client(restartable)
        namespace = f"continue-{secrets.token_hex(3)}"
        await restartable.create_namespace(namespace)
        restart = restartable
    async with client:
        for index in range(3):
            await client.create(configmap(f"page-{index}", namespace))
        first = await client.list(CONFIGMAP, namespace=namespace, limit=1)
        token = first["metadata"]["continue"]
        assert token
        # A later write, then compaction: the snapshot the token reads from is history now.
        await client.create(configmap("later", namespace))
        await api.compact()
        if restart is not None:
            await restart.stop_apiserver()
            await restart.start_apiserver()
        with pytest.raises(Gone) as expired:
            await client.list(CONFIGMAP, namespace=namespace, limit=1, continue_=token)
    assert expired.value.code == 410
    assert expired.value.reason in {"Expired", "Gone"}


def _lease(name: str, namespace: str, holder: str) -> dict[str, Any]:
    return {
        "apiVersion": LEASE.api_version,
        "kind": LEASE.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": micro_time()},
    }


async def test_a_stale_lease_update_conflicts(api: Api) -> None:
    created = await api.client.create(_lease("lock", api.namespace, "a"))
    mine, theirs = dict(created), {**created, "spec": {**created["spec"]}}
    mine["spec"] = {**created["spec"], "renewTime": micro_time()}
    await api.client.update(mine)
    theirs["spec"]["holderIdentity"] = "b"
    with pytest.raises(Conflict) as conflict:
        await api.client.update(theirs)
    assert conflict.value.code == 409
    current = await api.client.get(LEASE, "lock", namespace=api.namespace)
    assert current["spec"]["holderIdentity"] == "a"


async def test_a_deleting_object_takes_no_new_finalizer(api: Api) -> None:
    held = configmap("held", api.namespace)
    held["metadata"]["finalizers"] = ["test.reconcile/hold"]
    await api.client.create(held)
    await api.client.delete(CONFIGMAP, "held", namespace=api.namespace)
    deleting = await api.client.get(CONFIGMAP, "held", namespace=api.namespace)
    assert deleting["metadata"].get("deletionTimestamp")
    try:
        deleting["metadata"]["finalizers"].append("test.reconcile/another")
        with pytest.raises(Invalid) as refused:
            await api.client.update(deleting)
        assert refused.value.code == 422
        assert "no new finalizers" in refused.value.message
        # Removing finalizers stays allowed, and lets the deletion finish.
    finally:
        with contextlib.suppress(NotFound):
            await api.client.patch(
                CONFIGMAP, "held", {"metadata": {"finalizers": None}}, namespace=api.namespace
            )
    with pytest.raises(NotFound):
        await api.client.get(CONFIGMAP, "held", namespace=api.namespace)
