"""controllerutil's writes against the real apiserver and testenv's fake alike.

create_or_update, create_or_patch, merge_from and patch_status_if_changed. What matters most: a
mutate that changes nothing sends no write, so the resourceVersion stays (controller-runtime's
OperationResultNone); on the real apiserver a write that changes nothing would keep it too, but
only this test pins down that nothing is sent at all.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from reconcile import (
    CONDITION_MESSAGE_LIMIT,
    GVK,
    Client,
    ClusterConfig,
    Conflict,
    Invalid,
    OperationResult,
    create_or_patch,
    create_or_update,
    deep_copy,
    merge_from,
    patch_status_if_changed,
    set_condition,
)
from testenv import ControlPlane
from testenv.fake import FakeClient

pytestmark = pytest.mark.asyncio(loop_scope="session")

WIDGET_CRD = Path(__file__).parent / "testdata" / "widget-crd.yaml"
WIDGET = GVK("client.test", "v1", "Widget")
CONFIGMAP = GVK("", "v1", "ConfigMap")


class _Counting:
    """A client that counts the writes that reach it, so "no write" is observed, not assumed."""

    def __init__(self, inner: Client) -> None:
        self.inner = inner
        self.writes: list[str] = []

    async def get(self, gvk: GVK, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        return await self.inner.get(gvk, name, namespace=namespace)

    async def create(self, obj: Any) -> dict[str, Any]:
        self.writes.append("create")
        return await self.inner.create(obj)

    async def update(self, obj: Any) -> dict[str, Any]:
        self.writes.append("update")
        return await self.inner.update(obj)

    async def patch(self, obj: Any, patch: Any, /) -> dict[str, Any]:
        self.writes.append(f"patch {sorted(patch)}")
        return await self.inner.patch(obj, patch)

    async def patch_status(self, obj: Any, patch: Any, /) -> dict[str, Any]:
        self.writes.append(f"patch_status {sorted(patch['status'])}")
        return await self.inner.patch_status(obj, patch)


@pytest_asyncio.fixture(loop_scope="session")
async def live(host: ControlPlane) -> AsyncIterator[Client]:
    """A client of the real host, which serves the widget CRD."""
    await host.install_crds([WIDGET_CRD])
    config = await ClusterConfig.from_kubeconfig(
        host.kubeconfig, temp_dir=host.directory / "client"
    )
    async with Client(config) as client:
        yield client


@pytest_asyncio.fixture(loop_scope="session", params=["fake", "host"])
async def client(request: pytest.FixtureRequest, live: Client) -> Client:
    return FakeClient(crds=[WIDGET_CRD]) if request.param == "fake" else live


@pytest_asyncio.fixture(loop_scope="session")
async def space(client: Client, host: ControlPlane) -> AsyncIterator[str]:
    """A namespace only this test uses (on the fake, or on the host; see testenv's namespace)."""
    name = f"controllerutil-{secrets.token_hex(3)}"
    if isinstance(client, FakeClient):
        await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        yield name
        return
    await host.create_namespace(name)
    try:
        yield name
    finally:
        await host.request("DELETE", f"/api/v1/namespaces/{name}")


def _widget(namespace: str, name: str = "w") -> dict[str, Any]:
    return {
        "apiVersion": WIDGET.api_version,
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
    }


def _colour(colour: str) -> Any:
    def mutate(obj: dict[str, Any]) -> None:
        obj.setdefault("spec", {})["colour"] = colour

    return mutate


async def test_create_or_update_creates_then_updates_then_writes_nothing_for_a_no_op(
    client: Client, space: str
) -> None:
    counting = _Counting(client)
    widget = _widget(space)
    assert await create_or_update(counting, widget, _colour("red")) is OperationResult.CREATED
    created = widget["metadata"]["resourceVersion"]
    assert widget["metadata"]["uid"]  # obj holds what the apiserver stored

    widget = _widget(space)
    assert await create_or_update(counting, widget, _colour("red")) is OperationResult.UNCHANGED
    assert widget["metadata"]["resourceVersion"] == created
    assert widget["spec"]["colour"] == "red"  # read back

    widget = _widget(space)
    assert await create_or_update(counting, widget, _colour("blue")) is OperationResult.UPDATED
    assert widget["metadata"]["resourceVersion"] != created
    stored = await client.get(WIDGET, "w", namespace=space)
    assert stored["spec"]["colour"] == "blue"
    assert counting.writes == ["create", "update"]


async def test_create_or_update_of_a_stale_object_is_a_conflict(client: Client, space: str) -> None:
    await create_or_update(client, _widget(space), _colour("red"))

    async def meanwhile(obj: dict[str, Any]) -> None:
        # Another writer gets in between our read and our write.
        await client.patch(WIDGET, "w", {"spec": {"replicas": 3}}, namespace=space)
        obj["spec"]["colour"] = "green"

    with pytest.raises(Conflict):
        await create_or_update(client, _widget(space), meanwhile)


async def test_mutate_may_not_change_the_name_or_namespace(client: Client, space: str) -> None:
    counting = _Counting(client)

    def rename(obj: dict[str, Any]) -> None:
        obj["metadata"]["name"] = "other"

    for call in (create_or_update, create_or_patch):
        with pytest.raises(ValueError, match="cannot change the name or namespace"):
            await call(counting, _widget(space), rename)  # before create
    await create_or_update(counting, _widget(space), _colour("red"))
    for call in (create_or_update, create_or_patch):
        with pytest.raises(ValueError, match="cannot change the name or namespace"):
            await call(counting, _widget(space), rename)  # before update
    assert counting.writes == ["create"]


async def test_create_or_patch_says_which_of_object_and_status_it_wrote(
    client: Client, space: str
) -> None:
    counting = _Counting(client)

    def phase(value: str) -> Any:
        async def mutate(obj: dict[str, Any]) -> None:  # an async mutate works too
            obj.setdefault("status", {})["phase"] = value

        return mutate

    def both(obj: dict[str, Any]) -> None:
        obj["spec"]["colour"] = "green"
        obj["status"]["phase"] = "Both"

    widget = _widget(space)
    assert await create_or_patch(counting, widget, _colour("red")) is OperationResult.CREATED
    created = widget["metadata"]["resourceVersion"]
    assert await create_or_patch(counting, _widget(space), _colour("red")) is (
        OperationResult.UNCHANGED
    )
    widget = _widget(space)
    assert await create_or_patch(counting, widget, phase("Ready")) is (
        OperationResult.UPDATED_STATUS_ONLY
    )
    assert widget["metadata"]["resourceVersion"] != created
    assert await create_or_patch(counting, _widget(space), both) is (OperationResult.UPDATED_STATUS)
    assert await create_or_patch(counting, _widget(space), _colour("blue")) is (
        OperationResult.UPDATED
    )
    stored = await client.get(WIDGET, "w", namespace=space)
    assert stored["spec"]["colour"] == "blue"
    assert stored["status"] == {"phase": "Both"}
    assert counting.writes == [
        "create",
        "patch_status ['phase']",
        "patch ['spec']",
        "patch_status ['phase']",
        "patch ['spec']",
    ]


async def test_create_or_patch_sends_only_what_changed_and_keeps_other_writers_fields(
    client: Client, space: str
) -> None:
    config_map: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": space},
    }
    await client.create({**config_map, "data": {"theirs": "1", "ours": "a", "gone": "x"}})

    def mutate(obj: dict[str, Any]) -> None:
        obj["data"]["ours"] = "b"
        del obj["data"]["gone"]

    assert await create_or_patch(client, dict(config_map), mutate) is OperationResult.UPDATED
    stored = await client.get(CONFIGMAP, "c", namespace=space)
    assert stored["data"] == {"theirs": "1", "ours": "b"}


async def test_merge_from_sends_the_change_and_keeps_other_writers_fields(
    client: Client, space: str
) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "namespace": space}}
    obj = await client.create({**cm, "data": {"ours": "a", "theirs": "1"}})
    before = deep_copy(obj)
    await client.patch(obj, {"data": {"theirs": "2"}})  # another writer, after our read
    obj["data"]["ours"] = "b"
    patch = merge_from(before, obj)
    assert patch == {"data": {"ours": "b"}}
    stored = await client.patch(obj, patch)
    assert stored["data"] == {"ours": "b", "theirs": "2"}


async def test_merge_from_with_optimistic_lock_refuses_a_stale_read(
    client: Client, space: str
) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l", "namespace": space}}
    obj = await client.create({**cm, "data": {"ours": "a"}})
    fresh = deep_copy(obj)
    await client.patch(obj, {"data": {"theirs": "1"}})
    obj["data"]["ours"] = "b"
    with pytest.raises(Conflict):
        await client.patch(obj, merge_from(fresh, obj, optimistic_lock=True))
    current = await client.get(CONFIGMAP, "l", namespace=space)
    before = deep_copy(current)
    current["data"]["ours"] = "b"
    stored = await client.patch(current, merge_from(before, current, optimistic_lock=True))
    assert stored["data"] == {"ours": "b", "theirs": "1"}


async def test_patch_status_if_changed_writes_only_a_change_and_a_stale_copy_does_not_conflict(
    client: Client, space: str
) -> None:
    counting = _Counting(client)
    created = await client.create({**_widget(space), "spec": {"colour": "red"}})
    cached = await client.patch_status(created, {"status": {"phase": "Old", "selector": "x"}})
    obj = deep_copy(cached)
    assert not await patch_status_if_changed(counting, cached, obj)
    assert counting.writes == []
    await client.patch(created, {"spec": {"colour": "blue"}})  # the cached copy is now stale
    obj["status"]["phase"] = "Ready"
    with pytest.raises(Conflict):  # what a status update of the stale copy gets
        await client.update_status(deep_copy(obj))
    assert await patch_status_if_changed(counting, cached, obj)
    assert counting.writes == ["patch_status ['phase']"]
    assert obj["status"] == {"phase": "Ready", "selector": "x"}
    assert obj["spec"]["colour"] == "blue"  # obj holds what the apiserver sent


async def test_a_long_condition_message_is_truncated_to_what_the_apiserver_accepts(
    live: Client, namespace: str
) -> None:
    # On the apiserver only: the limit is its schema validation, which the fake does not apply.
    client = live
    created = await client.create({**_widget(namespace, "long"), "spec": {"colour": "red"}})
    message = "x" * (CONDITION_MESSAGE_LIMIT + 10)
    refused = deep_copy(created)
    refused["status"] = {
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "TooLong",
                "message": message,
                "lastTransitionTime": "2024-05-01T12:00:00Z",
            }
        ]
    }
    with pytest.raises(Invalid, match="message"):  # what an untruncated message gets
        await client.patch_status(refused, {"status": refused["status"]})
    obj = deep_copy(created)
    assert set_condition(obj, "Ready", False, "TooLong", message)
    assert await patch_status_if_changed(client, created, obj)
    (stored,) = obj["status"]["conditions"]
    assert len(stored["message"]) == CONDITION_MESSAGE_LIMIT
    assert stored["observedGeneration"] == created["metadata"]["generation"]
