"""Sharding against the real kube-apiserver: Leases for membership, labels for assignment.

Three managers (in this process, each with leader election, so one of them runs the sharder)
shard the ConfigMaps and Secrets of a namespace of their own; a Secret has the key of the
ConfigMap of its name, so the two move together, as a template and its binding would. Every
reconcile of either kind records replica, key, start and end; no key may ever be reconciled by two
replicas at once. Each replica's cache must
hold exactly its shard's objects; a shard that joins takes over the keys it now owns, drained from
their old shard first; a shard that leaves cleanly hands its keys over at once; a shard whose Lease
nobody renews loses its keys once the Lease expired.
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from anyio.abc import TaskGroup

from reconcile import (
    GVK,
    Client,
    ControllerOptions,
    Manager,
    NotFound,
    Request,
    controller_managed_by,
)
from reconcile.leaderelection import LEASE, micro_time
from reconcile.objects import resource_version_of
from reconcile.sharding import (
    ASSIGN_PATH_PREFIX,
    SHARD_OBJECTS,
    Ring,
    Shard,
    ShardAssigner,
    ShardedKind,
    Sharder,
    object_key,
    owner,
)
from reconcile.sharding import sharder as sharder_module
from reconcile.webhook import WebhookServer
from testenv import (
    ControlPlane,
    WebhookInstaller,
    WebhookInstallOptions,
    WebhookServing,
    eventually,
    manager_for,
)
from tests.builders import configmap, scaled

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
OBJECTS = 36
LEASE_DURATION = scaled(2.0)
RENEW_DEADLINE = scaled(1.5)
RETRY_PERIOD = scaled(0.3)
SETTLE = scaled(20.0)
"""How long assignments may take to settle after a membership change."""
HOLD = 0.02
"""Seconds each reconcile lasts: long enough that two shards at once would overlap."""


@dataclass
class Record:
    """Every reconcile of every replica: (replica, key, start, end)."""

    spans: list[tuple[str, str, float, float]] = field(default_factory=list)

    def overlaps(self) -> list[tuple[str, str, str]]:
        by_key: dict[str, list[tuple[float, float, str]]] = {}
        for replica, key, start, end in self.spans:
            by_key.setdefault(key, []).append((start, end, replica))
        found = []
        for key, spans in by_key.items():
            spans.sort()
            for (_, end, first), (start, _, second) in itertools.pairwise(spans):
                if start < end and first != second:
                    found.append((key, first, second))
        return found

    def reconciled_by(self, replica: str) -> set[str]:
        return {key for who, key, _, _ in self.spans if who == replica}


@dataclass
class Replica:
    manager: Manager
    shard: Shard
    scope: anyio.CancelScope
    sharder: Sharder
    stopped: anyio.Event = field(default_factory=anyio.Event)


def _kind(gvk: GVK, namespace: str, depth: int = 0) -> ShardedKind:
    def key(obj: Mapping[str, Any]) -> str | None:
        # Only this test's objects: the sharder sees every ConfigMap and Secret of the cluster.
        metadata = obj["metadata"]
        mine = metadata.get("namespace") == namespace and metadata["name"].startswith("cm-")
        return object_key(obj) if mine else None

    return ShardedKind(gvk, key=key, depth=depth)


def _ring(namespace: str) -> Ring:
    kinds = (_kind(CONFIGMAP, namespace), _kind(SECRET, namespace))
    return Ring(f"t{secrets.token_hex(3)}", kinds=kinds)


def _nothing(replica: Replica) -> None:
    pass


@dataclass
class Fleet:
    host: ControlPlane
    client: Client
    namespace: str
    ring: Ring
    group: TaskGroup
    record: Record = field(default_factory=Record)
    replicas: dict[str, Replica] = field(default_factory=dict)

    async def add(
        self,
        name: str,
        before_start: Callable[[Replica], None] = _nothing,
        *,
        webhook: WebhookServing | None = None,
    ) -> Replica:
        server = None
        if webhook is not None:
            server = WebhookServer(host=webhook.host, port=webhook.port, cert_dir=webhook.cert_dir)
        manager = await manager_for(
            self.host,
            webhook_server=server,
            leader_election=True,
            leader_election_id=f"sharder-{self.ring.name}",
            leader_election_namespace=self.namespace,
            leader_election_release_on_cancel=True,
            lease_duration=LEASE_DURATION,
            renew_deadline=RENEW_DEADLINE,
            retry_period=RETRY_PERIOD,
        )
        shard = Shard(
            manager,
            self.ring,
            name=name,
            namespace=self.namespace,
            lease_duration=LEASE_DURATION,
            renew_deadline=RENEW_DEADLINE,
            retry_period=RETRY_PERIOD,
        )
        manager.add(shard)
        sharder = Sharder(manager, self.ring, namespace=self.namespace)
        manager.add(sharder)
        if webhook is not None:
            assigner = ShardAssigner(sharder)
            manager.webhook_server.register(assigner.path, assigner)

        replica = Replica(manager, shard, anyio.CancelScope(), sharder)
        for kind in self.ring.kinds:
            self.watch(replica, kind.gvk)
        self.replicas[name] = replica
        before_start(replica)
        await self.group.start(self._run, replica)
        return replica

    def watch(self, replica: Replica, gvk: GVK) -> None:
        """Run a recording controller of ``gvk`` on ``replica``, behind its shard's guard."""
        name = replica.shard.name

        async def reconcile(request: Request) -> None:
            if request.namespace != self.namespace:
                return
            start = anyio.current_time()
            await anyio.sleep(HOLD)
            key = f"{request.namespace}/{request.name}"
            self.record.spans.append((name, key, start, anyio.current_time()))

        options = ControllerOptions(need_leader_election=False, max_concurrent_reconciles=4)
        (
            controller_managed_by(replica.manager)
            .named(f"{gvk.kind.lower()}s-{name}")
            .for_(gvk)
            .with_options(options)
            .complete(replica.shard.guard(gvk, reconcile))
        )

    async def _run(self, replica: Replica, *, task_status: Any) -> None:
        try:
            with replica.scope:
                await replica.manager.start(task_status=task_status)
        finally:
            replica.stopped.set()

    async def stop(self, name: str) -> None:
        replica = self.replicas.pop(name)
        replica.manager.stop()
        with anyio.fail_after(scaled(30)):
            await replica.stopped.wait()

    async def objects(self) -> list[dict[str, Any]]:
        items = []
        for gvk in (CONFIGMAP, SECRET):
            listed = await self.client.list(gvk, namespace=self.namespace)
            items += [o for o in listed["items"] if o["metadata"]["name"].startswith("cm-")]
        return items

    async def assignments(self) -> dict[str, str | None]:
        return {
            object_key(cm) or "": (cm["metadata"].get("labels") or {}).get(self.ring.shard_label)
            for cm in await self.objects()
        }

    async def settled_on(self, shards: list[str]) -> dict[str, str | None]:
        """Wait until every object is assigned to its owner among ``shards``, undrained."""

        async def settled() -> dict[str, str | None] | None:
            found: dict[str, str | None] = {}
            for cm in await self.objects():
                labels, key = cm["metadata"].get("labels") or {}, object_key(cm) or ""
                if self.ring.drain_label in labels or labels.get(self.ring.shard_label) != owner(
                    shards, key
                ):
                    return None
                if found.setdefault(key, labels[self.ring.shard_label]) != found[key]:
                    return None
            return found if len(found) == OBJECTS else None

        return await eventually(settled, timeout=SETTLE, interval=0.1)


@contextlib.asynccontextmanager
async def fleet(
    host: ControlPlane, client: Client, ring: Ring | None = None
) -> AsyncIterator[Fleet]:
    namespace = f"shard-{secrets.token_hex(3)}"
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:
        for index in range(OBJECTS):
            await client.create(configmap(f"cm-{index}", namespace, index=str(index)))
            meta = {"name": f"cm-{index}", "namespace": namespace}
            await client.create({"apiVersion": "v1", "kind": "Secret", "metadata": meta})
        async with anyio.create_task_group() as group:
            made = Fleet(host, client, namespace, ring or _ring(namespace), group)
            try:
                yield made
            finally:
                for name in list(made.replicas):
                    await made.stop(name)
    finally:
        await client.delete(GVK("", "v1", "Namespace"), namespace)


def _cached(replica: Replica, namespace: str) -> set[str]:
    keys: set[str] = set()
    for scope, informer in replica.manager.cache.informers().items():
        if scope.gvk in (CONFIGMAP, SECRET):
            stored = informer.indexer.keys()
            keys |= {key for key in stored if key.startswith(f"{namespace}/")}
    return keys


def _metric(replica: Replica, ring: Ring) -> float:
    value = replica.manager.registry.get_sample_value(
        SHARD_OBJECTS, {"ring": ring.name, "kind": "ConfigMap"}
    )
    return float(value or 0)


async def test_shards_own_disjoint_parts_and_a_joining_shard_takes_its_keys_after_a_drain(
    host: ControlPlane, client: Client
) -> None:
    async with fleet(host, client) as ring:
        await ring.add("r0")
        await ring.add("r1")
        first = await ring.settled_on(["r0", "r1"])
        assert set(first.values()) == {"r0", "r1"}, first

        async def every_key_reconciled_by_its_owner() -> bool:
            return all(key in ring.record.reconciled_by(s) for key, s in first.items() if s)

        await eventually(every_key_reconciled_by_its_owner, timeout=SETTLE)
        for name, replica in ring.replicas.items():
            mine = {key for key, shard in first.items() if shard == name}
            assert _cached(replica, ring.namespace) == mine
            assert _metric(replica, ring.ring) == len(mine)

        joined = await ring.add("r2")
        second = await ring.settled_on(["r0", "r1", "r2"])
        moved = {key for key in second if second[key] != first[key]}
        assert moved, second
        assert all(second[key] == "r2" for key in moved), second
        assert len(moved) < OBJECTS * 2 / 3, "rendezvous hashing moves only the new shard's keys"
        released = sum(
            r.manager.registry.get_sample_value(
                "sharding_drains_released_total", {"ring": ring.ring.name}
            )
            or 0
            for name, r in ring.replicas.items()
            if name != "r2"
        )
        assert released == 2 * len(moved), "both objects of every moved key were drained"

        async def new_shard_reconciled_its_keys() -> bool:
            return moved <= ring.record.reconciled_by("r2")

        await eventually(new_shard_reconciled_its_keys, timeout=SETTLE)
        assert _cached(joined, ring.namespace) == moved

        await ring.stop("r1")
        third = await ring.settled_on(["r0", "r2"])
        assert "r1" not in third.values()
        assert ring.record.overlaps() == []


async def test_a_shard_whose_lease_expires_loses_its_keys_without_a_drain(
    host: ControlPlane, client: Client
) -> None:
    async with fleet(host, client) as ring:
        # A shard that joined and died: its Lease is never renewed, and it never answers a drain.
        ghost = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": "ghost",
                "namespace": ring.namespace,
                "labels": {ring.ring.lease_label: "true"},
            },
            "spec": {
                "holderIdentity": "ghost",
                "leaseDurationSeconds": 3,
                "acquireTime": micro_time(),
                "renewTime": micro_time(),
            },
        }
        await client.create(ghost)
        await ring.add("r0")

        async def some_assigned_to_the_ghost() -> bool:
            return "ghost" in (await ring.assignments()).values()

        await eventually(some_assigned_to_the_ghost, timeout=SETTLE)
        await ring.settled_on(["r0"])
        leader = ring.replicas["r0"].manager.registry
        dead = leader.get_sample_value(
            "sharding_moves_total", {"ring": ring.ring.name, "reason": "dead"}
        )
        assert (dead or 0) >= 1, "the ghost's keys moved because its Lease expired"
        lease = await client.get(LEASE, "ghost", namespace=ring.namespace)
        assert lease["spec"]["holderIdentity"] == "ghost", "nobody took the dead shard's Lease"
        assert ring.record.overlaps() == []


async def test_a_kind_added_to_a_running_ring_is_assigned_and_reconciled(
    host: ControlPlane, client: Client
) -> None:
    # A ring that starts empty, as the detector's does before it discovers template kinds.
    async with fleet(host, client, Ring(f"t{secrets.token_hex(3)}")) as ring:
        replica = await ring.add("r0")
        for gvk in (CONFIGMAP, SECRET):
            assert ring.ring.add(_kind(gvk, ring.namespace))
            ring.watch(replica, gvk)
        await ring.settled_on(["r0"])

        async def reconciled() -> bool:
            return len(ring.record.reconciled_by("r0")) == OBJECTS

        await eventually(reconciled, timeout=SETTLE)
        assert _cached(replica, ring.namespace) == set(await ring.assignments())


async def test_a_keys_children_are_assigned_before_their_parent(
    host: ControlPlane, client: Client
) -> None:
    # The Secrets are the ConfigMaps' children (depth 1), as Works are a binding's: the shard
    # must have a key's Secret in its cache whenever it reconciles the ConfigMap.
    namespace_of_ring: list[str] = []
    missing: list[str] = []
    parents: set[str] = set()

    def check_children(replica: Replica) -> None:
        async def parent(request: Request) -> None:
            if request.namespace not in namespace_of_ring:
                return
            try:
                await replica.manager.client.get(SECRET, request.name, namespace=request.namespace)
            except NotFound:
                missing.append(request.name)
            parents.add(request.name)

        options = ControllerOptions(need_leader_election=False)
        (
            controller_managed_by(replica.manager)
            .named("parents")
            .for_(CONFIGMAP)
            .with_options(options)
            .complete(replica.shard.guard(CONFIGMAP, parent))
        )

    async with fleet(host, client, Ring(f"t{secrets.token_hex(3)}")) as ring:
        namespace_of_ring.append(ring.namespace)
        ring.ring.add(_kind(CONFIGMAP, ring.namespace))
        ring.ring.add(_kind(SECRET, ring.namespace, depth=1))
        await ring.add("r0", check_children)
        await ring.settled_on(["r0"])

        async def every_parent_reconciled() -> bool:
            return len(parents) == OBJECTS

        await eventually(every_parent_reconciled, timeout=SETTLE)
        assert missing == [], "ConfigMaps reconciled before their Secret was in the shard's cache"


async def test_the_sharder_keeps_only_what_it_decides_on(
    host: ControlPlane, client: Client
) -> None:
    # It holds every object of the ring: annotations, owner references and the rest of the
    # metadata would be most of the leader's memory (bench/sharding.py).
    async with fleet(host, client) as ring:
        replica = await ring.add("r0")
        await ring.settled_on(["r0"])
        cache = replica.sharder.cache
        assert cache is not None
        kept = [
            obj
            for gvk in (CONFIGMAP, SECRET)
            for informer in cache.get_informers(gvk, metadata_only=True)
            for obj in informer.indexer.values()
            if obj["metadata"].get("namespace") == ring.namespace
        ]
        assert len(kept) == 2 * OBJECTS
        for obj in kept:
            assert set(obj) == {"metadata", "shardingKey"}, obj
            assert set(obj["metadata"]) == {"name", "namespace", "resourceVersion", "labels"}, obj
            assert obj["metadata"]["labels"] == {ring.ring.shard_label: "r0"}, obj
            assert obj["shardingKey"] == f"{ring.namespace}/{obj['metadata']['name']}", obj


async def test_the_sharder_does_not_patch_again_what_its_cache_has_not_shown_yet(
    host: ControlPlane, client: Client
) -> None:
    # A key's Secret (depth 1) is labelled, then its ConfigMap; the Secret's event enqueues the
    # key again, often before the ConfigMap's event is cached: deciding then on the ConfigMap
    # the sharder replaced would patch it again, and meet a Conflict.
    async with fleet(host, client, Ring(f"t{secrets.token_hex(3)}")) as ring:
        ring.ring.add(_kind(CONFIGMAP, ring.namespace))
        ring.ring.add(_kind(SECRET, ring.namespace, depth=1))
        replica = await ring.add("r0")
        await ring.settled_on(["r0"])
        await ring.add("r1")
        await ring.settled_on(["r0", "r1"])
        conflicts = replica.manager.registry.get_sample_value(
            "sharding_label_conflicts_total", {"ring": ring.ring.name}
        )
        assert (conflicts or 0) == 0, "label patches decided on versions the sharder replaced"


def _assignment_webhook(ring: Ring, namespace: str) -> dict[str, Any]:
    """A MutatingWebhookConfiguration sending the test's new ConfigMaps and Secrets without a
    shard to the assigner, as deploy/ would: failurePolicy Ignore (the sharder assigns on first
    sight what the webhook did not)."""
    webhook = {
        "name": f"{ring.name}.sharding.reconcile.io",
        "clientConfig": {"url": f"https://webhook.invalid{ASSIGN_PATH_PREFIX}{ring.name}"},
        "rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["configmaps", "secrets"],
            }
        ],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "objectSelector": {
            "matchExpressions": [{"key": ring.shard_label, "operator": "DoesNotExist"}]
        },
        "failurePolicy": "Ignore",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": f"assign-{ring.name}"},
        "webhooks": [webhook],
    }


async def test_objects_created_while_the_leader_serves_the_webhook_arrive_assigned(
    host: ControlPlane, client: Client, webhooks: WebhookInstaller
) -> None:
    async with fleet(host, client) as ring:
        options = WebhookInstallOptions(
            mutating_webhooks=[_assignment_webhook(ring.ring, ring.namespace)]
        )
        serving = await webhooks.install(options)
        replica = await ring.add("r0", webhook=serving)
        await ring.settled_on(["r0"])
        registry = replica.manager.registry
        labels = {"ring": ring.ring.name, "shard": "r0"}
        patched = registry.get_sample_value("sharding_assignments_total", labels)

        names = [f"cm-new-{index}" for index in range(6)]
        for name in names:
            created = await client.create(configmap(name, ring.namespace))
            assert created["metadata"]["labels"][ring.ring.shard_label] == "r0", created
        keys = {f"{ring.namespace}/{name}" for name in names}

        async def reconciled() -> bool:
            return keys <= ring.record.reconciled_by("r0")

        await eventually(reconciled, timeout=SETTLE)
        assert registry.get_sample_value("sharding_admission_assignments_total", labels) == 6
        assert registry.get_sample_value("sharding_assignments_total", labels) == patched, (
            "labelled as they were created: the sharder patched none of them"
        )
        assert ring.record.overlaps() == []


async def test_a_keys_own_patches_wake_it_for_its_next_depth(
    host: ControlPlane, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After labelling a key's deepest objects the sharder waits until its cache shows them, then
    # labels the next depth. The events of those patches must wake the key whenever they are
    # handled: on a busy event loop they often are before the settle that sent the patches has
    # returned. Only the events can wake a key here (no fallback wait within the test).
    monkeypatch.setattr(sharder_module, "OWN_WRITE_WAIT", 600.0)
    label = Sharder._label

    async def label_then_let_the_watch_run(
        self: Sharder, kind: ShardedKind, obj: Mapping[str, Any], labels: Any
    ) -> None:
        await label(self, kind, obj, labels)
        name = object_key(obj) or ""
        written = self._written.get((kind.gvk, name))
        assert self.cache is not None
        informer = self.cache.get_informers(kind.gvk, metadata_only=True)[0]

        async def shown() -> bool:
            cached = informer.indexer.get(name) or {}
            return written is None or resource_version_of(cached) == written[0]

        await eventually(shown, timeout=SETTLE, interval=0.01)

    monkeypatch.setattr(Sharder, "_label", label_then_let_the_watch_run)
    async with fleet(host, client, Ring(f"t{secrets.token_hex(3)}")) as ring:
        ring.ring.add(_kind(CONFIGMAP, ring.namespace))
        ring.ring.add(_kind(SECRET, ring.namespace, depth=1))
        await ring.add("r0")
        await ring.settled_on(["r0"])
