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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

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
]

SHARD_PREFIX: Final = "shard.sharding.reconcile.io/"
DRAIN_PREFIX: Final = "drain.sharding.reconcile.io/"
RING_PREFIX: Final = "ring.sharding.reconcile.io/"
_NAME_LIMIT: Final = 63  # the name part of a label key

KeyFunc = Callable[[Mapping[str, Any]], "str | None"]
"""An object's sharding key; None leaves the object unassigned (no shard reconciles it)."""


def object_key(obj: Mapping[str, Any]) -> str | None:
    """``namespace/name``, or ``name`` for a cluster-scoped object: the default key."""
    metadata = obj.get("metadata") or {}
    namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
    return f"{namespace}/{name}" if namespace else name


@dataclass(frozen=True)
class ShardedKind:
    """A kind of the ring, and how its objects' keys are computed."""

    gvk: GVK
    key: KeyFunc = object_key


@dataclass(frozen=True)
class Ring:
    """A named set of kinds sharded together over the shards whose Leases carry the ring label.

    Raises:
        ValueError: (at construction) a name that is not a DNS label short enough for a label
            key, no kinds, or one kind twice.
    """

    name: str
    kinds: tuple[ShardedKind, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.name or len(self.name) > _NAME_LIMIT or not _dns_label(self.name):
            raise ValueError(f"ring name {self.name!r} must be a DNS label (a-z, 0-9, '-')")
        gvks = [kind.gvk for kind in self.kinds]
        if not gvks or len(set(gvks)) != len(gvks):
            raise ValueError(f"ring {self.name!r} needs kinds, each once (got {gvks})")

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

    def kind(self, gvk: GVK) -> ShardedKind:
        """The ring's entry for ``gvk``.

        Raises:
            KeyError: ``gvk`` is not a kind of this ring.
        """
        for kind in self.kinds:
            if kind.gvk == gvk:
                return kind
        raise KeyError(f"{gvk} is not sharded by ring {self.name!r}")

    def selector(self, shard: str) -> str:
        """The label selector of the objects assigned to ``shard``."""
        return f"{self.shard_label}={shard}"


def owner(shards: Iterable[str], key: str) -> str | None:
    """The shard that owns ``key`` among ``shards`` (None when there is none): the one with the
    highest weight hash(shard, key)."""
    best: tuple[int, str] | None = None
    for shard in shards:
        weight = _weight(shard, key)
        if best is None or (weight, shard) > best:
            best = (weight, shard)
    return best[1] if best else None


def _weight(shard: str, key: str) -> int:
    digest = hashlib.blake2b(f"{shard}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _dns_label(name: str) -> bool:
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-")
    return set(name) <= allowed and name[0] != "-" and name[-1] != "-"
