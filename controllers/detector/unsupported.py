"""Unsupported names the policy fields the CRD accepts but no controller here acts on.

Karmada's API has fields this project does not implement yet; a policy setting one would
otherwise be silently taken at less than its word. ``unsupported_fields`` lists those a
(Cluster)PropagationPolicy sets (a field set to its no-op value, e.g. ``association: false``, is
not reported), and ``UnsupportedFieldReporter`` records one Warning Event ``UnsupportedField``
per field on the policy, once per policy generation (not on every reconcile).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from controllers.api import propagation_spec
from reconcile import EventRecorder, generation_of, uid_of

__all__ = ["UNSUPPORTED_FIELD", "UnsupportedFieldReporter", "unsupported_fields"]

UNSUPPORTED_FIELD: Final = "UnsupportedField"
"""Reason of the Warning Event naming a policy field that is accepted but ignored."""

Check = Callable[[Mapping[str, Any]], bool]


def _set(field: str) -> Check:
    return lambda spec: spec.get(field) not in (None, False, {}, [])


# Remove an entry when a controller starts acting on its field.
_UNSUPPORTED: Final[Mapping[str, Check]] = {
    "spec.association": _set("association"),
    "spec.schedulePriority": _set("schedulePriority"),
}


def unsupported_fields(policy: Mapping[str, Any]) -> list[str]:
    """The accepted-but-ignored fields ``policy`` sets, as paths (sorted)."""
    spec = propagation_spec(policy)
    return sorted(path for path, check in _UNSUPPORTED.items() if check(spec))


class UnsupportedFieldReporter:
    """Reports each policy's unsupported fields once per generation (kept in memory: a restart
    reports them once more)."""

    def __init__(self, recorder: EventRecorder | None) -> None:
        self.recorder = recorder
        self._reported: dict[str, int] = {}

    def report(self, policy: Mapping[str, Any]) -> list[str]:
        """Record the Events for ``policy`` unless done for its generation; returns the fields
        reported now."""
        key, generation = uid_of(policy), generation_of(policy)
        if not key or self._reported.get(key) == generation:
            return []
        self._reported[key] = generation
        fields = unsupported_fields(policy)
        if self.recorder is not None:
            for field in fields:
                message = f"{field} is not supported here and is ignored"
                self.recorder.event(dict(policy), "Warning", UNSUPPORTED_FIELD, message)
        return fields

    def forget(self, policy: Mapping[str, Any]) -> None:
        """Drop what was recorded for a deleted policy."""
        self._reported.pop(uid_of(policy), None)
