"""execution applies Works to member clusters: the execution controller and what it is built from.

``setup(context)`` registers the controller. It creates, updates (keeping what the member owns,
skipping no-ops) and deletes member objects for each Work, watches the managed objects in every
member so deleted or drifted ones are re-applied, and writes the Work's Applied condition and
``manifestStatuses`` (reflected status and health of each object).
"""

from controllers.execution.controller import (
    DEFAULT_WORKERS,
    MEMBER_SYNC_TIMEOUT,
    NAME,
    ApplyFailed,
    ConflictAborted,
    ExecutionController,
    MemberUnavailable,
    setup,
    setup_execution_controller,
)
from controllers.execution.drift import (
    APPLIED_DIGEST_ANNOTATION,
    Applied,
    AppliedRecords,
    ObjectRef,
    contains,
    manifest_digest,
    needs_update,
    with_digest,
)
from controllers.execution.retain import (
    KARMADA_ANNOTATIONS,
    KARMADA_LABELS,
    release_patch,
    retain_member_fields,
)
from controllers.execution.source import (
    MANAGED_SELECTOR,
    ManagedObjects,
    MemberObjects,
    managed_informer,
    managed_scope,
    work_request,
)
from controllers.execution.workstatus import (
    APPLIED_MESSAGE,
    StatusReflector,
    failure_message,
    identifier_of,
    status_patch,
)

__all__ = [
    "APPLIED_MESSAGE",
    "APPLIED_DIGEST_ANNOTATION",
    "Applied",
    "AppliedRecords",
    "ApplyFailed",
    "ConflictAborted",
    "DEFAULT_WORKERS",
    "ExecutionController",
    "KARMADA_ANNOTATIONS",
    "KARMADA_LABELS",
    "MANAGED_SELECTOR",
    "MEMBER_SYNC_TIMEOUT",
    "ManagedObjects",
    "MemberObjects",
    "MemberUnavailable",
    "NAME",
    "ObjectRef",
    "StatusReflector",
    "contains",
    "failure_message",
    "identifier_of",
    "managed_informer",
    "managed_scope",
    "manifest_digest",
    "needs_update",
    "with_digest",
    "release_patch",
    "retain_member_fields",
    "setup",
    "setup_execution_controller",
    "status_patch",
    "work_request",
]
