"""A Work whose member cannot be reached is retried soon, not with a growing backoff."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest

from controllers.clusterscope import ClusterScope
from controllers.execution import controller as execution
from controllers.execution.controller import (
    UNREACHABLE_RETRY,
    ApplyFailed,
    ExecutionController,
    unreachable,
)
from reconcile import Conflict, Invalid, Result, ServiceUnavailable

pytestmark = pytest.mark.asyncio(loop_scope="session")

WORK = {
    "apiVersion": "work.karmada.io/v1alpha1",
    "kind": "Work",
    "metadata": {"name": "web", "namespace": "karmada-es-member1", "generation": 1},
    "spec": {"workload": {"manifests": [{"kind": "Deployment"}, {"kind": "Service"}]}},
}


class _Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    def event(self, obj: Any, kind: str, reason: str, message: str) -> None:
        self.events.append(reason)


def _controller(failures: list[BaseException | None]) -> ExecutionController:
    """An execution controller whose manifests fail with ``failures`` (None: applied)."""
    recorder = _Recorder()
    context: Any = SimpleNamespace(
        manager=SimpleNamespace(client=None, cache=None),
        members=None,
        interpreter=None,
        recorder=lambda name: recorder,
        sharding=None,
        scope=ClusterScope.push(),
    )
    reconciler = ExecutionController(context)
    outcomes = iter(failures)

    async def sync(work: Any, cluster: str, member: Any, ordinal: int, manifest: Any) -> Any:
        error = next(outcomes)
        if error is None:
            return execution._Outcome(ordinal, written=True)
        return execution._Outcome(ordinal, error=f"m: {error}", unreachable=unreachable(error))

    async def report(*args: Any, **kwargs: Any) -> None:
        return None

    reconciler._sync = sync  # type: ignore[method-assign]
    reconciler._report = report  # type: ignore[method-assign]
    return reconciler


@pytest.mark.parametrize(
    "error",
    [
        aiohttp.ClientConnectorError(SimpleNamespace(ssl=None, host="h", port=1), OSError(111)),  # type: ignore[arg-type]
        aiohttp.ServerDisconnectedError(),
        ConnectionResetError(),
        TimeoutError(),
        ServiceUnavailable({"code": 503, "message": "not all paths installed yet"}),
    ],
    ids=["refused", "disconnected", "reset", "timed out", "503 while starting"],
)
async def test_an_unreachable_member_is_retried_after_a_fixed_delay(error: BaseException) -> None:
    result = await _controller([error, None])._sync_all(dict(WORK), "member1", None)  # type: ignore[arg-type]
    assert result == Result(requeue_after=UNREACHABLE_RETRY)


@pytest.mark.parametrize(
    "error", [Invalid({"code": 422, "message": "spec.replicas"}), Conflict({"code": 409})]
)
async def test_a_refused_manifest_still_fails_with_backoff(error: BaseException) -> None:
    # Mixed with an unreachable one too: the refusal needs the backoff, not a tight retry.
    with pytest.raises(ApplyFailed):
        await _controller([error, TimeoutError()])._sync_all(dict(WORK), "member1", None)  # type: ignore[arg-type]
