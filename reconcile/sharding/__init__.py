"""Sharding spreads a controller's objects over replicas: shard Leases for membership, labels and
label-selected watches for assignment (the design of timebertt's kubernetes-controller-sharding).

A ``Ring`` names the kinds sharded together and how each object's key is computed; every replica
runs a ``Shard`` of its rings (its Lease, its label-selected cache, ``shard.guard(...)`` around
its reconcilers); the leader runs a ``Sharder`` per ring, which labels each object with the live
shard that owns its key and moves objects, drained first, when shards come and go; a
``ShardAssigner`` webhook labels new objects as they are created, where the leader can tell.

Clusters a multi-cluster provider engages are spread the same way, each replica deciding for
itself: ``ShardedProvider`` engages only the clusters its shard owns among the live shards that
``LiveShards`` follows on every replica.
"""

from reconcile.sharding.admission import ASSIGN_PATH_PREFIX, ShardAssigner
from reconcile.sharding.live_shards import LiveShards
from reconcile.sharding.membership import Membership
from reconcile.sharding.metrics import SHARD_OBJECTS, SharderMetrics
from reconcile.sharding.ring import (
    DRAIN_PREFIX,
    RING_PREFIX,
    SHARD_PREFIX,
    KeyFunc,
    Ring,
    ShardedKind,
    object_key,
    owner,
    relabel,
    shard_labels,
    without_sharding_labels,
)
from reconcile.sharding.shard import NOT_CACHED_RETRY, Shard, check_shard_name
from reconcile.sharding.sharded_provider import ShardedProvider
from reconcile.sharding.sharder import EXPIRY_SLACK, ORPHAN_PRIORITY, Sharder

__all__ = [
    "ASSIGN_PATH_PREFIX",
    "DRAIN_PREFIX",
    "EXPIRY_SLACK",
    "ORPHAN_PRIORITY",
    "NOT_CACHED_RETRY",
    "RING_PREFIX",
    "SHARD_OBJECTS",
    "SHARD_PREFIX",
    "KeyFunc",
    "LiveShards",
    "Membership",
    "Ring",
    "Shard",
    "ShardAssigner",
    "ShardedKind",
    "ShardedProvider",
    "Sharder",
    "SharderMetrics",
    "check_shard_name",
    "object_key",
    "owner",
    "relabel",
    "shard_labels",
    "without_sharding_labels",
]
