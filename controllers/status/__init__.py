"""status carries member state back to the host: binding aggregated status and template status.

``setup(context)`` registers one status controller for ResourceBindings and one for
ClusterResourceBindings. Each collects the binding's Works into ``status.aggregatedStatus`` and the
FullyApplied condition, then writes the interpreter's aggregation of them onto the resource
template's status subresource. The Works' own status (Applied, ``manifestStatuses``) is written by
the execution controller, right after it applies them (see ``controllers.execution``).
"""

from __future__ import annotations

from controllers.context import Context
from controllers.status.aggregate import (
    FULLY_APPLIED_FAILED_MESSAGE,
    FULLY_APPLIED_SUCCESS_MESSAGE,
    aggregated_items,
    fully_applied,
    manifest_index,
)
from controllers.status.binding import (
    BINDING,
    CLUSTER_BINDING,
    PERMISSIONS,
    BindingKind,
    BindingStatusController,
    setup_binding_status_controllers,
)
from controllers.status.template import (
    AGGREGATE_STATUS_FAILED,
    AGGREGATE_STATUS_SUCCEEDED,
    TemplateStatusWriter,
    interpreter_items,
)

__all__ = [
    "AGGREGATE_STATUS_FAILED",
    "AGGREGATE_STATUS_SUCCEEDED",
    "BINDING",
    "BindingKind",
    "BindingStatusController",
    "CLUSTER_BINDING",
    "FULLY_APPLIED_FAILED_MESSAGE",
    "FULLY_APPLIED_SUCCESS_MESSAGE",
    "PERMISSIONS",
    "TemplateStatusWriter",
    "aggregated_items",
    "fully_applied",
    "interpreter_items",
    "manifest_index",
    "setup",
    "setup_binding_status_controllers",
]


def setup(context: Context) -> None:
    """Set up the binding status controllers (the controller-manager's entry point)."""
    setup_binding_status_controllers(context)
