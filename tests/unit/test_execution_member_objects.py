"""MemberObjects, the execution controller's source in one engaged member: kinds added as Works
name them, the member's Works enqueued at start, every handler removed at stop."""

from __future__ import annotations

import anyio
import pytest

from controllers.api import (
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
)
from controllers.execution import MemberObjects
from controllers.execution.source import MANAGED_SCOPE, managed_informer
from reconcile import GVK, Cluster, Obj, Request, WorkQueue
from testenv import FakeClient, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
ES = "karmada-es-m"


def managed(kind: str, name: str, work: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "apps",
            "labels": {MANAGED_LABEL: MANAGED_LABEL_VALUE},
            "annotations": {WORK_NAME_ANNOTATION: work, WORK_NAMESPACE_ANNOTATION: ES},
        },
    }


async def drained(queue: WorkQueue[Request], count: int) -> set[Request]:
    """The next ``count`` requests of ``queue`` (each marked done)."""
    got = set()
    with anyio.fail_after(10):
        for _ in range(count):
            request = await queue.get()
            queue.done(request)
            got.add(request)
    return got


async def test_kinds_added_before_and_after_start_enqueue_works_until_stopped() -> None:
    fake = FakeClient(objects=[managed("ConfigMap", "a", "work-a")])
    member = Cluster("m", client=fake)
    forgotten: list[MemberObjects] = []
    works = [Request("work-a", ES), Request("work-b", ES)]
    objects = MemberObjects(member.cache, "m", MANAGED_SCOPE, lambda: works, forgotten.append)
    objects.add(CONFIGMAP)
    queue: WorkQueue[Request] = WorkQueue()
    async with anyio.create_task_group() as group, queue:
        await group.start(member.cache.run)
        await objects.start(queue, group)
        await objects.wait_for_sync(10)
        # Started: the member's Works, and the Work of the object already there.
        assert await drained(queue, 2) == set(works)

        objects.add(SECRET)  # a Work of a new kind appeared
        assert objects.kinds == {CONFIGMAP, SECRET}
        await fake.create(managed("Secret", "s", "work-s"))
        assert await drained(queue, 1) == {Request("work-s", ES)}

        objects.stop()
        assert forgotten == [objects]
        informers = [managed_informer(member.cache, gvk) for gvk in (CONFIGMAP, SECRET)]

        async def no_handlers() -> bool:
            return all(not informer._registrations for informer in informers)

        await eventually(no_handlers, timeout=5)
        await fake.create(managed("ConfigMap", "late", "work-late"))
        objects.add(GVK("apps", "v1", "Deployment"))  # stopped: ignored
        assert objects.kinds == {CONFIGMAP, SECRET}
        assert len(queue) == 0
        group.cancel_scope.cancel()
