"""workloadrebalancer is Karmada's workload-rebalancer: a one-off fresh rescheduling of workloads.

``setup(context)`` registers the ``workload-rebalancer`` controller (``controller``): each
WorkloadRebalancer (apps.karmada.io/v1alpha1) makes the bindings of the workloads it names
rescheduled afresh (``spec.rescheduleTriggeredAt``), reports each workload's result and is
deleted ``ttlSecondsAfterFinished`` after it finished; ``observed`` holds the pure status logic.
"""

from controllers.workloadrebalancer.controller import (
    PERMISSIONS,
    REBALANCER_NAME,
    RebalanceIncomplete,
    RebalancerController,
    setup,
)
from controllers.workloadrebalancer.observed import (
    needs_trigger,
    observed_workloads,
    parse_time,
    time_left,
    workload_key,
)

__all__ = [
    "PERMISSIONS",
    "REBALANCER_NAME",
    "RebalanceIncomplete",
    "RebalancerController",
    "needs_trigger",
    "observed_workloads",
    "parse_time",
    "setup",
    "time_left",
    "workload_key",
]
