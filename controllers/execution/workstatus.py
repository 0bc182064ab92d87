"""Work status is what a Work reports about its manifests: the Applied condition and their states.

``StatusReflector.reflect`` turns one member object into a ``manifestStatuses`` entry: its identity
(the manifest's ordinal, group, version, kind, namespace, name), the status the interpreter
reflects (InterpretStatus; the whole status when no source handles the kind) and its health
(InterpretHealth: Healthy or Unhealthy; Healthy when no source handles the kind, as Karmada treats
kinds without a health rule; Unknown when the interpretation fails). Interpreter failures become
Warning Events on the Work, never exceptions: one bad customization must not stop the apply.

``status_patch`` computes the Work's new status fields from the Applied verdict and the reflected
entries, and returns None when nothing changed, so a reconcile triggered by a member event that
changed nothing writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from controllers.api import (
    APPLIED_FAILED_REASON,
    APPLIED_SUCCESSFUL_REASON,
    WORK_APPLIED_CONDITION,
    ManifestStatus,
    ResourceHealth,
    ResourceIdentifier,
    work_status,
)
from controllers.interpreter import Interpreter, InterpreterError, NotSupported
from reconcile import GVK, EventRecorder, Obj, deep_copy, name_of, namespace_of, set_condition

__all__ = [
    "APPLIED_MESSAGE",
    "INTERPRET_HEALTH_FAILED",
    "REFLECT_STATUS_FAILED",
    "StatusReflector",
    "failure_message",
    "identifier_of",
    "removal_message",
    "status_patch",
]

APPLIED_MESSAGE: Final = "Manifest has been successfully applied"
REFLECT_STATUS_FAILED: Final = "ReflectStatusFailed"
INTERPRET_HEALTH_FAILED: Final = "InterpretHealthFailed"


def identifier_of(ordinal: int, obj: Mapping[str, Any]) -> ResourceIdentifier:
    """Which manifest of a Work ``obj`` is: its index and identity (namespace left out if none)."""
    gvk = GVK.of(obj)
    identifier = ResourceIdentifier(
        ordinal=ordinal, group=gvk.group, version=gvk.version, kind=gvk.kind, name=name_of(obj)
    )
    if namespace_of(obj):
        identifier["namespace"] = namespace_of(obj)
    return identifier


def _describe(obj: Mapping[str, Any]) -> str:
    namespace = namespace_of(obj)
    key = f"{namespace}/{name_of(obj)}" if namespace else name_of(obj)
    return f"{obj.get('kind')} {key}"


class StatusReflector:
    """Builds manifestStatuses entries through the interpreter; reports failures as Events."""

    def __init__(self, interpreter: Interpreter, recorder: EventRecorder) -> None:
        self.interpreter = interpreter
        self.recorder = recorder

    async def reflect(self, work: Obj, ordinal: int, observed: Obj) -> ManifestStatus:
        """The manifestStatuses entry for the member object ``observed``."""
        entry = ManifestStatus(
            identifier=identifier_of(ordinal, observed), health=await self._health(work, observed)
        )
        status = await self._status(work, observed)
        if status is not None:
            entry["status"] = status
        return entry

    async def _status(self, work: Obj, observed: Obj) -> dict[str, Any] | None:
        try:
            return await self.interpreter.reflect_status(observed)
        except NotSupported:
            status = observed.get("status")
            return deep_copy(status) if isinstance(status, dict) else None
        except InterpreterError as error:
            message = f"Reflect status of {_describe(observed)} failed: {error}"
            self.recorder.event(work, "Warning", REFLECT_STATUS_FAILED, message)
            return None

    async def _health(self, work: Obj, observed: Obj) -> ResourceHealth:
        try:
            healthy = await self.interpreter.interpret_health(observed)
        except NotSupported:
            return "Healthy"
        except InterpreterError as error:
            message = f"Interpret health of {_describe(observed)} failed: {error}"
            self.recorder.event(work, "Warning", INTERPRET_HEALTH_FAILED, message)
            return "Unknown"
        return "Healthy" if healthy else "Unhealthy"


def _merged_entries(
    previous: Sequence[ManifestStatus], fresh: Sequence[ManifestStatus], total: int
) -> list[ManifestStatus]:
    """Fresh entries, plus previous ones for manifests not reflected now (a transient failure)."""
    by_ordinal = {e.get("identifier", {}).get("ordinal"): e for e in previous}
    by_ordinal.update({e["identifier"].get("ordinal"): e for e in fresh})
    return [by_ordinal[i] for i in range(total) if i in by_ordinal]


def failure_message(failures: Sequence[str], total: int) -> str:
    """The Applied condition's message when some of ``total`` manifests failed (Karmada's words)."""
    return f"Failed to apply all manifests ({total - len(failures)}/{total}): {'; '.join(failures)}"


def removal_message(failures: Sequence[str]) -> str:
    """The Applied condition's words for member objects of dropped manifests not deleted yet."""
    return (
        f"Failed to delete objects the Work no longer has ({len(failures)}): {'; '.join(failures)}"
    )


def status_patch(
    work: Obj,
    failure: str | None,
    fresh: Sequence[ManifestStatus],
    total: int,
    *,
    keep_entries: bool = False,
) -> dict[str, Any] | None:
    """The Work's new ``conditions`` and ``manifestStatuses`` as a merge patch, None if unchanged.

    ``failure`` says why the Work is not applied (None: Applied is True); ``fresh`` holds the
    entries reflected now; ``total`` is the number of manifests. With ``keep_entries`` only the
    condition may change: ``manifestStatuses`` is the record of what was applied, and it must
    outlive a manifest the Work dropped until its member object is deleted.
    """
    current = work_status(work)
    holder: Obj = {
        "metadata": work.get("metadata", {}),
        "status": {"conditions": deep_copy(current.get("conditions") or [])},
    }
    if failure is None:
        set_condition(
            holder, WORK_APPLIED_CONDITION, True, APPLIED_SUCCESSFUL_REASON, APPLIED_MESSAGE
        )
    else:
        set_condition(holder, WORK_APPLIED_CONDITION, False, APPLIED_FAILED_REASON, failure)
    conditions = holder["status"]["conditions"]
    previous = current.get("manifestStatuses") or []
    if keep_entries:
        return None if conditions == current.get("conditions") else {"conditions": conditions}
    entries = _merged_entries(previous, fresh, total)
    unchanged = conditions == current.get("conditions") and entries == previous
    return None if unchanged else {"conditions": conditions, "manifestStatuses": entries or None}
