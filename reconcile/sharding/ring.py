"""Ring says which kinds are sharded together, under which labels, and which shard owns a key.

A ``Ring`` is a named set of ``ShardedKind``: the objects of those kinds are spread over the live
shards of the ring by rendezvous hashing of a key each kind computes from an object (by default
``namespace/name``; a child kind returns its parent's key, so parent and children land on one
shard). Rendezvous (highest random weight) hashing moves, when a shard joins or leaves, exactly the
keys whose best shard changed — about 1/N of them — and needs no virtual nodes to spread evenly.

The assignment is recorded on each object as the label ``shard.sharding.reconcile.io/<ring>`` (the
shard's name); ``drain.sharding.reconcile.io/<ring>`` asks the current shard to let go of it first.
A shard's Lease carries ``ring.sharding.reconcile.io/<ring>``. The names follow the layout of
timebertt's kubernetes-controller-sharding (``shard.alpha.sharding.timebertt.dev/<ring>``,
``drain.alpha...``), in this project's domain.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from reconcile.gvk import GVK

__all__ = [
    "DRAIN_PREFIX",
    "RING_PREFIX",
    "SHARD_PREFIX",
    "KeyFunc",
    "Ring",
    "ShardedKind",
    "object_key",
    "owner",
    "relabel",
    "shard_labels",
    "without_sharding_labels",
]

SHARD_PREFIX: Final = "shard.sharding.reconcile.io/"
DRAIN_PREFIX: Final = "drain.sharding.reconcile.io/"
RING_PREFIX: Final = "ring.sharding.reconcile.io/"
_NAME_LIMIT: Final = 63  # the name part of a label key
_HASH_SPAN: Final = float(2**64)

KeyFunc = Callable[[Mapping[str, Any]], "str | None"]
"""An object's sharding key; None leaves the object unassigned (no shard reconciles it)."""


def object_key(obj: Mapping[str, Any]) -> str | None:
    """``namespace/name``, or ``name`` for a cluster-scoped object: the default key."""
    metadata = obj.get("metadata") or {}
    namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
    return f"{namespace}/{name}" if namespace else name


@dataclass(frozen=True)
class ShardedKind:
    """A kind of the ring, how its objects' keys are computed, and how deep in a key's chain of
    owners its objects are.

    ``depth`` orders an assignment: a key's objects are labelled deepest first (a child kind
    has a greater depth than its parent's), each depth once the deeper ones are labelled, so
    the shard taking a key over has its children when the parents that read them arrive — a
    parent reconciled before its children were in that shard's cache would see them missing
    (and, say, write a status that lost them until they arrive).
    """

    gvk: GVK[Any]
    key: KeyFunc = object_key
    depth: int = 0


KindListener = Callable[[ShardedKind], None]


class Ring:
    """A named set of kinds sharded together over the shards whose Leases carry the ring label.

    Kinds may be added while running (``add``: template kinds a controller discovers); the Shard
    and the Sharder of the ring hear of each through ``subscribe`` and start holding it.

    Raises:
        ValueError: (at construction) a name that is not a DNS label short enough for a label
            key, or one kind twice.
    """

    def __init__(self, name: str, kinds: Iterable[ShardedKind] = ()) -> None:
        if not name or len(name) > _NAME_LIMIT or not _dns_label(name):
            raise ValueError(f"ring name {name!r} must be a DNS label (a-z, 0-9, '-')")
        self.name = name
        self._kinds: dict[GVK, ShardedKind] = {}
        self._listeners: list[KindListener] = []
        for kind in kinds:
            if kind.gvk in self._kinds:
                raise ValueError(f"ring {name!r} has {kind.gvk} twice: each kind once")
            self._kinds[kind.gvk] = kind

    def __repr__(self) -> str:
        return f"Ring({self.name!r}, kinds={[str(g) for g in self._kinds]})"

    @property
    def kinds(self) -> tuple[ShardedKind, ...]:
        """The ring's kinds, in the order they were added."""
        return tuple(self._kinds.values())

    def add(self, kind: ShardedKind) -> bool:
        """Shard ``kind`` too; whether it is new (the same kind again does nothing).

        Raises:
            ValueError: ``kind.gvk`` is in the ring with another key function.
            Exception: whatever a subscriber raised; the kind is then not added, and the
                subscribers after that one did not hear of it (a Shard subscribes before its
                Sharder: a kind this replica cannot hold is never assigned by it).
        """
        known = self._kinds.get(kind.gvk)
        if known is not None:
            if known != kind:
                raise ValueError(f"{kind.gvk} is in ring {self.name!r} with another key")
            return False
        self._kinds[kind.gvk] = kind
        try:
            for listener in list(self._listeners):
                listener(kind)
        except BaseException:
            del self._kinds[kind.gvk]
            raise
        return True

    def subscribe(self, listener: KindListener) -> None:
        """Call ``listener(kind)`` for every kind added from now on."""
        self._listeners.append(listener)

    def has(self, gvk: GVK[Any]) -> bool:
        """Whether ``gvk`` is one of the ring's kinds."""
        return gvk in self._kinds

    @property
    def shard_label(self) -> str:
        """The label whose value names the shard an object is assigned to."""
        return SHARD_PREFIX + self.name

    @property
    def drain_label(self) -> str:
        """The label that asks an object's current shard to let it go."""
        return DRAIN_PREFIX + self.name

    @property
    def lease_label(self) -> str:
        """The label on the Leases of the ring's shards."""
        return RING_PREFIX + self.name

    def kind(self, gvk: GVK[Any]) -> ShardedKind:
        """The ring's entry for ``gvk``.

        Raises:
            KeyError: ``gvk`` is not a kind of this ring.
        """
        try:
            return self._kinds[gvk]
        except KeyError:
            raise KeyError(f"{gvk} is not sharded by ring {self.name!r}") from None

    def selector(self, shard: str) -> str:
        """The label selector of the objects assigned to ``shard``."""
        return f"{self.shard_label}={shard}"


def shard_labels(obj: Mapping[str, Any]) -> dict[str, str]:
    """``obj``'s shard labels (every ring's, no drain label): for a child written with its
    parent's key, so that it is in the parent's shard's cache at once instead of after the
    sharder labelled it (the sharder agrees: same key, same shard)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return {k: str(v) for k, v in labels.items() if k.startswith(SHARD_PREFIX)}


def without_sharding_labels(labels: Mapping[str, Any]) -> dict[str, Any]:
    """``labels`` without shard and drain labels: what a comparison of an object's own labels,
    or a copy of them into another cluster, must not see."""
    return {k: v for k, v in labels.items() if not k.startswith((SHARD_PREFIX, DRAIN_PREFIX))}


class LabelPatcher(Protocol):
    """The one verb ``relabel`` needs; ``reconcile.client.client.Client`` satisfies it."""

    async def patch(
        self,
        gvk: GVK[Any],
        name: str,
        patch: Any,
        /,
        *,
        namespace: str | None = None,
        metadata_only: bool,
    ) -> dict[str, Any]:
        """Merge-patch the object."""
        ...


async def relabel(
    client: LabelPatcher, gvk: GVK[Any], obj: Mapping[str, Any], labels: Mapping[str, str | None]
) -> str:
    """Merge ``labels`` (None removes one) into ``obj``'s, only if it is still at the
    resourceVersion it was read at: every assignment, drain and release is decided on one
    version of the object, and must not land on a newer one. Returns the resourceVersion the
    patch made.

    Raises:
        Conflict: it changed since. NotFound: it is gone.
    """
    metadata = obj["metadata"]
    patch = {"metadata": {"resourceVersion": metadata["resourceVersion"], "labels": labels}}
    # Answered with the metadata only: whole objects (a Work's manifests) need not come back,
    # to be decoded and dropped, for each of thousands of label patches.
    namespace = metadata.get("namespace") or None
    patched = await client.patch(
        gvk, metadata["name"], patch, namespace=namespace, metadata_only=True
    )
    return str((patched.get("metadata") or {}).get("resourceVersion") or "")


def owner(
    shards: Iterable[str], key: str, weights: Mapping[str, float] | None = None
) -> str | None:
    """The shard that owns ``key`` among ``shards`` (None when there is none): the one with the
    highest hash(shard, key). A shard's weight in ``weights`` (default 1) scales its expected
    share of the keys: weighted rendezvous hashing, score ``-weight / ln(hash / 2**64)``, which
    for equal weights ranks as the hash itself (and is computed as that, exactly)."""
    if weights and any(weights.get(shard, 1.0) != 1.0 for shard in shards):
        return _weighted_owner(shards, key, weights)
    best: tuple[int, str] | None = None
    for shard in shards:
        score = _hash(shard, key)
        if best is None or (score, shard) > best:
            best = (score, shard)
    return best[1] if best else None


def _weighted_owner(shards: Iterable[str], key: str, weights: Mapping[str, float]) -> str | None:
    best: tuple[float, str] | None = None
    for shard in shards:
        unit = (_hash(shard, key) + 0.5) / _HASH_SPAN  # in (0, 1): the logarithm is negative
        score = -weights.get(shard, 1.0) / math.log(unit)
        if best is None or (score, shard) > best:
            best = (score, shard)
    return best[1] if best else None


def _hash(shard: str, key: str) -> int:
    digest = hashlib.blake2b(f"{shard}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _dns_label(name: str) -> bool:
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-")
    return set(name) <= allowed and name[0] != "-" and name[-1] != "-"
