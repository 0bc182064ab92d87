"""Record writes core/v1 Events about objects: the recorder and broadcaster, and the correlator
that aggregates and rate-limits them (client-go's tools/record).
"""

from reconcile.record.correlator import (
    AGGREGATE_INTERVAL,
    AGGREGATE_MAX_EVENTS,
    AGGREGATE_PREFIX,
    MAX_REMEMBERED,
    SPAM_BURST,
    SPAM_QPS,
    Correlation,
    EventCorrelator,
    EventLog,
)
from reconcile.record.recorder import (
    EVENT_GVK,
    EVENT_MESSAGE_LIMIT,
    EventBroadcaster,
    EventRecorder,
    EventSeverity,
)

__all__ = [
    "AGGREGATE_INTERVAL",
    "AGGREGATE_MAX_EVENTS",
    "AGGREGATE_PREFIX",
    "Correlation",
    "EVENT_GVK",
    "EVENT_MESSAGE_LIMIT",
    "EventBroadcaster",
    "EventCorrelator",
    "EventLog",
    "EventRecorder",
    "EventSeverity",
    "MAX_REMEMBERED",
    "SPAM_BURST",
    "SPAM_QPS",
]
