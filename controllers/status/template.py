"""Template status is the resource template's status on the host, combined from its members' states.

``TemplateStatusWriter.update`` asks the interpreter's AggregateStatus (for a Deployment: counts
summed, ``observedGeneration`` moved to the template's generation only once every member reports
it runs that generation) and writes the result through the template's status subresource, only
when it differs from the template's current status. Kinds no interpreter source aggregates are
left alone. The template is read live, not from the cache: the status just written must be what
the next comparison sees, or every update would be written twice (Karmada reads live for the same
reason). Failures of the interpreter or of the write become Warning Events on the template.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from controllers.api import AggregatedStatusItem, ObjectReference
from controllers.interpreter import AggregatedStatusItem as InterpreterItem
from controllers.interpreter import Interpreter, InterpreterError, NotSupported, Operation
from reconcile import GVK, Client, EventRecorder, NotFound, Obj

__all__ = [
    "AGGREGATE_STATUS_FAILED",
    "AGGREGATE_STATUS_SUCCEEDED",
    "TemplateStatusWriter",
    "interpreter_items",
]

AGGREGATE_STATUS_SUCCEEDED: Final = "AggregateStatusSucceed"
AGGREGATE_STATUS_FAILED: Final = "AggregateStatusFailed"


def interpreter_items(items: Sequence[AggregatedStatusItem]) -> list[InterpreterItem]:
    """The binding's aggregatedStatus as the interpreter's values.

    Raises:
        ValueError: an item is malformed (not written by this package).
    """
    return [InterpreterItem.from_dict(item) for item in items]


class TemplateStatusWriter:
    """Writes aggregated member status onto resource templates."""

    def __init__(self, reader: Client, interpreter: Interpreter, recorder: EventRecorder) -> None:
        self.reader = reader
        self.interpreter = interpreter
        self.recorder = recorder

    async def update(
        self, resource: ObjectReference, items: Sequence[AggregatedStatusItem]
    ) -> bool:
        """Aggregate ``items`` onto the template ``resource``; returns whether it was written.

        Raises:
            InterpreterError: the aggregation failed (also recorded as an Event).
            ApiError: the template could not be read or written (Conflict: retry).
        """
        try:
            gvk = GVK.of(resource)
        except ValueError:
            return False
        if not self.interpreter.handles(gvk, Operation.AGGREGATE_STATUS):
            return False
        template = await self._read(gvk, resource)
        if template is None:
            return False  # deleted; its binding goes with it
        aggregated = await self._aggregate(template, items)
        if aggregated is None or aggregated.get("status") == template.get("status"):
            return False
        return await self._write(template, aggregated)

    async def _read(self, gvk: GVK, resource: ObjectReference) -> Obj | None:
        namespace = resource.get("namespace") or None
        try:
            return await self.reader.get(gvk, str(resource.get("name")), namespace=namespace)
        except NotFound:
            return None

    async def _aggregate(self, template: Obj, items: Sequence[AggregatedStatusItem]) -> Obj | None:
        try:
            return await self.interpreter.aggregate_status(template, interpreter_items(items))
        except NotSupported:
            # The source that handled the kind was withdrawn while the template was read (e.g. a
            # webhook configuration deleted): nothing aggregates it any more, not a failure.
            return None
        except (InterpreterError, ValueError) as error:
            message = f"Aggregating the members' status failed: {error}"
            self.recorder.event(template, "Warning", AGGREGATE_STATUS_FAILED, message)
            raise InterpreterError(message) from error

    async def _write(self, template: Obj, aggregated: Obj) -> bool:
        # managedFields stay out of the body: omitted, the apiserver keeps them as they are.
        metadata = {k: v for k, v in template["metadata"].items() if k != "managedFields"}
        body = {**template, "metadata": metadata, "status": aggregated.get("status")}
        try:
            await self.reader.update_status(body)
        except NotFound:
            # Deleted meanwhile, or the kind has no status subresource: nothing to write to.
            message = f"{template.get('kind')} has no status subresource, or was deleted"
            self.recorder.event(template, "Warning", AGGREGATE_STATUS_FAILED, message)
            return False
        message = "Update Resource with AggregatedStatus successfully."
        self.recorder.event(template, "Normal", AGGREGATE_STATUS_SUCCEEDED, message)
        return True
