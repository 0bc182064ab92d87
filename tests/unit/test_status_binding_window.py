"""The binding status controller writes a change once, with what came with it (issue #29).

A binding's Works are applied, and their members report, at nearly the same moment; each partial
aggregation written on its own cost a binding status and a template status write. The controller
waits ``window`` seconds from the reconcile that first saw a change, then writes them all at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import anyio
import pytest

from controllers.api import (
    FULLY_APPLIED_CONDITION,
    RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
    WORK_GVK,
    crd_paths,
)
from controllers.context import Context
from controllers.interpreter import Interpreter
from controllers.status.binding import BINDING, BindingStatusController, Window
from reconcile import (
    Cache,
    CachedClient,
    EventBroadcaster,
    EventRecorder,
    Request,
    Result,
    is_condition_true,
)
from reconcile.client.options import PatchOptions, Target
from testenv import FakeClient, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

REQUEST = Request("web-deployment", "default")


class CountingFake(FakeClient):
    """The fake apiserver, counting binding status writes."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.status_writes = 0

    async def _patch(self, target: Target, body: Any, options: PatchOptions) -> dict[str, Any]:
        self.status_writes += target.gvk == RESOURCE_BINDING_GVK and target.subresource == "status"
        return await super()._patch(target, body, options)


@dataclass
class _Manager:
    client: CachedClient


@dataclass
class _Context:
    manager: _Manager
    interpreter: Interpreter
    broadcaster: EventBroadcaster

    def recorder(self, name: str) -> EventRecorder:
        return self.broadcaster.recorder(name)


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _binding() -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": "web-deployment",
            "namespace": "default",
            "labels": {RESOURCE_BINDING_PERMANENT_ID_LABEL: "id"},
        },
        "spec": {
            "resource": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default"}
            | {"name": "web"},
            "clusters": [{"name": "member1"}, {"name": "member2"}],
        },
        "status": {"lastScheduledTime": "2026-01-01T00:00:00Z"},
    }


def _work(cluster: str) -> dict[str, Any]:
    metadata = {"name": "web", "namespace": "default"}
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    return {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {
            "name": "web",
            "namespace": f"karmada-es-{cluster}",
            "labels": {RESOURCE_BINDING_PERMANENT_ID_LABEL: "id"},
            "annotations": {
                RESOURCE_BINDING_NAMESPACE_ANNOTATION: "default",
                RESOURCE_BINDING_NAME_ANNOTATION: "web-deployment",
            },
        },
        "spec": {"workload": {"manifests": [manifest]}},
    }


APPLIED = {
    "conditions": [
        {
            "type": "Applied",
            "status": "True",
            "reason": "AppliedSuccessful",
            "message": "applied",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
}


@asynccontextmanager
async def _controller(
    window: float,
) -> AsyncIterator[tuple[BindingStatusController, CountingFake, Clock]]:
    fake = CountingFake(crds=crd_paths(), objects=[_binding(), _work("member1"), _work("member2")])
    cache = Cache(fake, sync_timeout=10)
    context = _Context(_Manager(CachedClient(fake, cache)), Interpreter(), EventBroadcaster(fake))
    controller = BindingStatusController(cast(Context, context), BINDING, window=window)
    clock = Clock()
    controller.window.clock = clock
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        for gvk in (RESOURCE_BINDING_GVK, WORK_GVK):
            cache.get_informer(gvk)
        await cache.wait_for_cache_sync()
        yield controller, fake, clock
        group.cancel_scope.cancel()


async def _apply(fake: FakeClient, controller: BindingStatusController, cluster: str) -> None:
    """Mark ``cluster``'s Work applied and wait until the controller's cache shows it."""
    work = await fake.get(WORK_GVK, "web", namespace=f"karmada-es-{cluster}")
    await fake.update_status({**work, "status": APPLIED})

    async def cached() -> bool:
        seen = await controller.host.get(WORK_GVK, "web", namespace=f"karmada-es-{cluster}")
        return bool(seen.get("status"))

    await eventually(cached, timeout=10)


async def _fully_applied(fake: FakeClient) -> bool:
    binding = await fake.get(RESOURCE_BINDING_GVK, "web-deployment", namespace="default")
    return is_condition_true(binding, FULLY_APPLIED_CONDITION)


def _wait(result: Result | None) -> float | None:
    return None if result is None else result.requeue_after


async def test_changes_within_the_window_are_written_once() -> None:
    async with _controller(window=0.1) as (controller, fake, clock):
        await _apply(fake, controller, "member1")
        assert _wait(await controller.reconcile(REQUEST)) == pytest.approx(0.1)
        assert fake.status_writes == 0, "the first partial state waits"
        clock.now += 0.05
        await _apply(fake, controller, "member2")
        waited = _wait(await controller.reconcile(REQUEST))
        assert waited == pytest.approx(0.05), "still counted from the first sight"
        clock.now += 0.05
        assert await controller.reconcile(REQUEST) is None
        assert fake.status_writes == 1
        assert await _fully_applied(fake)
        assert len(controller.window) == 0


async def test_without_a_window_each_partial_state_is_written() -> None:
    async with _controller(window=0.0) as (controller, fake, _):
        await _apply(fake, controller, "member1")
        assert await controller.reconcile(REQUEST) is None
        await _apply(fake, controller, "member2")
        assert await controller.reconcile(REQUEST) is None
        assert fake.status_writes == 2


async def test_a_window_is_closed_by_an_unchanged_or_deleted_binding() -> None:
    window = Window(1.0, clock=lambda: 5.0)
    assert window.remaining(REQUEST) == 1.0
    window.close(REQUEST)
    assert len(window) == 0
    assert window.remaining(REQUEST) == 1.0, "a new change starts a new window"
