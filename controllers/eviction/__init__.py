"""Eviction moves bindings off member clusters: the eviction task, the taint manager, the
graceful-eviction controller."""

from controllers.eviction.task import (
    EVICTION_PRODUCER_TAINT_MANAGER,
    EVICTION_REASON_APPLICATION_FAILURE,
    EVICTION_REASON_TAINT_UNTOLERATED,
    PURGE_MODE_DIRECTLY,
    PURGE_MODE_GRACEFULLY,
    PURGE_MODE_GRACIOUSLY,
    PURGE_MODE_IMMEDIATELY,
    PURGE_MODE_NEVER,
    PURGE_MODES,
    TASK_PURGE_MODES,
    PurgeMode,
    evict,
    evicting_clusters,
    purges_at_once,
    timestamp,
)

__all__ = [
    "EVICTION_PRODUCER_TAINT_MANAGER",
    "EVICTION_REASON_APPLICATION_FAILURE",
    "EVICTION_REASON_TAINT_UNTOLERATED",
    "PURGE_MODES",
    "PURGE_MODE_DIRECTLY",
    "PURGE_MODE_GRACEFULLY",
    "PURGE_MODE_GRACIOUSLY",
    "PURGE_MODE_IMMEDIATELY",
    "PURGE_MODE_NEVER",
    "TASK_PURGE_MODES",
    "PurgeMode",
    "evict",
    "evicting_clusters",
    "purges_at_once",
    "timestamp",
]
