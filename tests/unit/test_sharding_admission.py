"""The sharder over testenv's fake: when the shard assignment webhook labels a new object, when it
leaves it to the sharder, and which keys the sharder settles first."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from reconcile import GVK, Manager
from reconcile.client.options import PatchOptions, Target
from reconcile.leaderelection import micro_time
from reconcile.objects import Obj
from reconcile.sharding import Ring, ShardAssigner, ShardedKind, Sharder, owner
from reconcile.webhook import CREATE, UPDATE, AdmissionRequest, AdmissionResponse, Webhook
from testenv import FakeClient, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
NAMESPACE = "default"


def _lease(name: str, ring: Ring, duration: int = 600) -> dict[str, Any]:
    metadata = {"name": name, "namespace": NAMESPACE, "labels": {ring.lease_label: "true"}}
    spec = {"holderIdentity": name, "leaseDurationSeconds": duration, "renewTime": micro_time()}
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": spec,
    }


def _request(name: str, *, operation: str = CREATE, **labels: str) -> AdmissionRequest:
    # As the apiserver sends a create: the namespace in the request, maybe not in the object.
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}
    return AdmissionRequest(
        uid="u", kind=CONFIGMAP, operation=operation, name=name, namespace=NAMESPACE, object=obj
    )


def _labels_after(response: AdmissionResponse, request: AdmissionRequest) -> dict[str, str]:
    """The object's labels once the response's JSON patch is applied (add operations only)."""
    assert response.allowed
    review = response.to_review(request.uid)["response"]
    assert request.object is not None
    labels = dict(request.object["metadata"].get("labels") or {})
    if "patch" in review:
        for op in json.loads(base64.b64decode(review["patch"])):
            assert op["op"] in ("add", "replace"), op
            if op["path"] == "/metadata/labels":
                labels = dict(op["value"])
            else:
                labels[op["path"].rsplit("/", 1)[1].replace("~1", "/")] = op["value"]
    return labels


@asynccontextmanager
async def leading(fake: FakeClient, ring: Ring, **options: Any) -> AsyncIterator[Sharder]:
    sharder = Sharder(Manager(client=fake), ring, namespace=NAMESPACE, **options)
    async with anyio.create_task_group() as group:
        await group.start(sharder.run)
        try:
            yield sharder
        finally:
            group.cancel_scope.cancel()


def _ring() -> Ring:
    return Ring("r", kinds=(ShardedKind(CONFIGMAP), ShardedKind(SECRET, depth=1)))


async def test_a_new_object_gets_the_owner_of_its_key_only_where_the_sharder_leads() -> None:
    fake, ring = FakeClient(), _ring()
    await fake.create(_lease("s1", ring))
    await fake.create(_lease("s2", ring))
    idle = Sharder(Manager(client=fake), ring, namespace=NAMESPACE)
    request = _request("a")
    assert _labels_after(await ShardAssigner(idle).handle(request), request) == {}, (
        "a replica that does not lead cannot see the key's other objects: unchanged"
    )
    async with leading(fake, ring) as sharder:
        assigner = ShardAssigner(sharder)
        assert assigner.path == "/assign-shard-r"

        async def both_live() -> bool:
            return sharder.live == ("s1", "s2")

        await eventually(both_live)
        labels = _labels_after(await assigner.handle(request), request)
        assert labels == {ring.shard_label: owner(["s1", "s2"], f"{NAMESPACE}/a")}

        labelled = _request("b", **{ring.shard_label: "s9"})
        assert _labels_after(await assigner.handle(labelled), labelled) == {ring.shard_label: "s9"}
        update = _request("c", operation=UPDATE)
        assert _labels_after(await assigner.handle(update), update) == {}
        unnamed = _request("")
        assert _labels_after(await assigner.handle(unnamed), unnamed) == {}
        registry = sharder.manager.registry
        sample = registry.get_sample_value(
            "sharding_admission_assignments_total",
            {"ring": "r", "shard": labels[ring.shard_label]},
        )
        assert sample == 1


async def test_a_key_on_its_way_to_another_shard_is_left_to_the_sharder() -> None:
    fake, ring = FakeClient(), _ring()
    await fake.create(_lease("s1", ring))
    await fake.create(_lease("s2", ring))
    # A key whose Secret is on the shard that does not own it: the sharder drains it from there,
    # and s2 (no replica behind its Lease here) never lets go.
    names = (f"k{i}" for i in range(100))
    name = next(n for n in names if owner(["s1", "s2"], f"{NAMESPACE}/{n}") == "s1")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {ring.shard_label: "s2"}},
    }
    await fake.create(secret)
    async with leading(fake, ring) as sharder:

        async def drained() -> bool:
            current = await fake.get(SECRET, name, namespace=NAMESPACE)
            return ring.drain_label in current["metadata"]["labels"]

        await eventually(drained)
        request = _request(name)
        labels = _labels_after(await ShardAssigner(sharder).handle(request), request)
        assert labels == {}, "assigned now, the ConfigMap would be on s1 while s2 holds the Secret"


class _GatedFake(FakeClient):
    """ConfigMap patches wait for ``gate``, and are recorded in ``patched`` as they pass it."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = anyio.Event()
        self.patched: list[str] = []

    async def _patch(self, target: Target, body: Any, options: PatchOptions) -> Obj:
        if target.gvk == CONFIGMAP:
            await self.gate.wait()
            self.patched.append(target.name)
        return await super()._patch(target, body, options)


def _configmap(name: str, **labels: str) -> Obj:
    metadata = {"name": name, "namespace": NAMESPACE, "labels": labels}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


async def _one_shard_dying(fake: FakeClient, ring: Ring, keys: int) -> list[str]:
    """The Leases of s1 and s2, which nobody renews (dead a second from now); returns the names
    of ``keys`` keys that s2 owns meanwhile."""
    await fake.create(_lease("s1", ring))
    await fake.create(_lease("s2", ring, duration=1))
    names = (f"o{i}" for i in range(1000))
    return [n for n in names if owner(["s1", "s2"], f"{NAMESPACE}/{n}") == "s2"][:keys]


async def test_a_dead_shards_keys_are_settled_before_the_new_objects_waiting() -> None:
    fake, ring = _GatedFake(), _ring()
    orphans = await _one_shard_dying(fake, ring, 5)
    for name in orphans:
        await fake.create(_configmap(name, **{ring.shard_label: "s2"}))  # settled while s2 lives
    async with leading(fake, ring, workers=1) as sharder:

        async def both_live() -> bool:
            return sharder.live == ("s1", "s2")

        await eventually(both_live)
        fresh = [f"new{i}" for i in range(10)]
        for name in fresh:  # the worker waits at the gate with the first, the rest queue up
            await fake.create(_configmap(name))

        async def s2_dead() -> bool:
            return sharder.live == ("s1",)

        await eventually(s2_dead, timeout=10)
        fake.gate.set()

        async def all_patched() -> bool:
            return len(fake.patched) == len(orphans) + len(fresh)

        await eventually(all_patched)
    # The first new object's patch was in flight when s2 died; the dead shard's keys come next.
    assert fake.patched[0] in fresh
    assert sorted(fake.patched[1 : 1 + len(orphans)]) == sorted(orphans), fake.patched


class _RecordingFake(FakeClient):
    """Every patch recorded in ``patched``, in order: (kind, name)."""

    def __init__(self) -> None:
        super().__init__()
        self.patched: list[tuple[str, str]] = []

    async def _patch(self, target: Target, body: Any, options: PatchOptions) -> Obj:
        self.patched.append((target.gvk.kind, target.name))
        return await super()._patch(target, body, options)


async def test_a_key_whose_move_began_goes_before_the_keys_not_begun() -> None:
    # Its children labelled, a key waits for the sharder's cache to show them, then labels its
    # parent: taken up then, not behind every other key's first step (a wave of children, a
    # wave of parents), each key's wait overlaps the other keys' patches.
    fake, ring = _RecordingFake(), _ring()
    orphans = await _one_shard_dying(fake, ring, 8)
    for name in orphans:  # settled while s2 lives
        await fake.create(_configmap(name, **{ring.shard_label: "s2"}))
        await fake.create({**_configmap(name, **{ring.shard_label: "s2"}), "kind": "Secret"})
    async with leading(fake, ring, workers=1):

        async def all_patched() -> bool:
            return len(fake.patched) == 2 * len(orphans)

        await eventually(all_patched, timeout=10)
    order = fake.patched
    between = {
        name: order.index(("ConfigMap", name)) - order.index(("Secret", name)) - 1
        for name in orphans
    }
    assert max(between.values()) <= 2, order


async def test_the_leaders_own_shard_takes_its_weight_in_keys() -> None:
    fake, ring = FakeClient(), _ring()
    await fake.create(_lease("s1", ring))
    await fake.create(_lease("s2", ring))
    with pytest.raises(ValueError, match="leader_weight"):
        Sharder(Manager(client=fake), ring, leader_shard="s1", leader_weight=1.5)
    async with leading(fake, ring, leader_shard="s1", leader_weight=0.0) as sharder:

        async def both_live() -> bool:
            return sharder.live == ("s1", "s2")

        await eventually(both_live)
        assigner = ShardAssigner(sharder)
        for name in ("a", "b", "c", "d"):
            request = _request(name)
            labels = _labels_after(await assigner.handle(request), request)
            assert labels == {ring.shard_label: "s2"}, "weight 0: the leader's shard owns none"


async def test_a_malformed_object_or_a_failing_key_is_admitted_unchanged_never_denied() -> None:
    fake = FakeClient()

    def exploding(obj: Any) -> str | None:
        raise KeyError("a key function that fails on this object")

    ring = Ring("r", kinds=(ShardedKind(CONFIGMAP, key=exploding),))
    await fake.create(_lease("s1", ring))
    async with leading(fake, ring) as sharder:

        async def live() -> bool:
            return sharder.live == ("s1",)

        await eventually(live)
        webhook = Webhook(ShardAssigner(sharder))
        for metadata in ({"name": "a"}, "not an object", {"name": "b", "labels": ["x"]}):
            obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
            request = AdmissionRequest(
                uid="u", kind=CONFIGMAP, operation=CREATE, namespace=NAMESPACE, object=obj
            )
            response = await webhook.review(request)
            assert response.allowed, response
            assert not response.patch, "admitted as it is: the sharder assigns it on first sight"
