"""Finalizers: keys added to live objects, finalizers run and keys removed on deleting ones."""

from __future__ import annotations

from typing import Any

import pytest

from reconcile import FinalizeError, FinalizeResult, Finalizers, finalizers_of

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _obj(*finalizers: str, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "a", "namespace": "n", "finalizers": list(finalizers)}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


class _Recording:
    def __init__(self, result: FinalizeResult | None = None, error: Exception | None = None):
        self.calls: list[str] = []
        self.result = result
        self.error = error

    async def finalize(self, obj: dict[str, Any]) -> FinalizeResult | None:
        self.calls.append(obj["metadata"]["name"])
        if self.error is not None:
            raise self.error
        return self.result


async def test_a_live_object_gets_the_missing_keys_and_no_finalizer_runs() -> None:
    finalizers, first = Finalizers(), _Recording()
    finalizers.register("example.com/first", first)
    finalizers.register("example.com/second", _Recording())
    obj = _obj("example.com/second", "someone.else/theirs")
    assert await finalizers.finalize(obj) == FinalizeResult(updated=True)
    assert finalizers_of(obj) == ("example.com/second", "someone.else/theirs", "example.com/first")
    assert first.calls == []
    assert await finalizers.finalize(obj) == FinalizeResult()  # nothing left to add


async def test_a_deleting_object_runs_present_finalizers_and_loses_their_keys_only() -> None:
    finalizers, present, absent = Finalizers(), _Recording(), _Recording()
    finalizers.register("example.com/present", present)
    finalizers.register("example.com/absent", absent)
    obj = _obj("example.com/present", "someone.else/theirs", deleting=True)
    assert await finalizers.finalize(obj) == FinalizeResult(updated=True)
    assert present.calls == ["a"]
    assert absent.calls == []  # never added to a deleting object, never run
    assert finalizers_of(obj) == ("someone.else/theirs",)


async def test_a_finalizer_reports_a_status_change() -> None:
    finalizers = Finalizers()
    finalizers.register("example.com/s", _Recording(FinalizeResult(status_updated=True)))
    result = await finalizers.finalize(_obj("example.com/s", deleting=True))
    assert result == FinalizeResult(updated=True, status_updated=True)


async def test_failures_are_collected_their_keys_kept_and_the_others_still_run() -> None:
    finalizers = Finalizers()
    finalizers.register("example.com/bad", _Recording(error=RuntimeError("member unreachable")))
    finalizers.register("example.com/good", _Recording())
    finalizers.register("example.com/worse", _Recording(error=KeyError("spec")))

    async def plain(obj: dict[str, Any]) -> None:  # a plain async function is a finalizer too
        obj["metadata"].setdefault("annotations", {})["cleaned"] = "yes"

    finalizers.register("example.com/plain", plain)
    obj = _obj("example.com/bad", "example.com/good", "example.com/worse", "example.com/plain")
    obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    with pytest.raises(FinalizeError) as raised:
        await finalizers.finalize(obj)
    assert sorted(raised.value.errors) == ["example.com/bad", "example.com/worse"]
    assert "finalizer 'example.com/bad' failed: member unreachable" in str(raised.value)
    assert raised.value.result == FinalizeResult(updated=True)
    assert finalizers_of(obj) == ("example.com/bad", "example.com/worse")
    assert obj["metadata"]["annotations"] == {"cleaned": "yes"}


async def test_a_key_registers_once_and_is_not_empty() -> None:
    finalizers = Finalizers()
    finalizers.register("example.com/once", _Recording())
    with pytest.raises(ValueError, match="already registered"):
        finalizers.register("example.com/once", _Recording())
    with pytest.raises(ValueError, match="must not be empty"):
        finalizers.register("", _Recording())
    assert finalizers.keys() == ("example.com/once",)
