"""Which member objects a Work writes and deletes, against a real host and real members.

Two Works naming one member object: the second neither overwrites it (conflict resolution Abort)
nor deletes it when it goes; a manifest dropped from a Work is deleted from the member.
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import WORK_GVK, WORK_NAME_ANNOTATION, execution_namespace
from reconcile import Obj
from testenv import Environment
from tests.builders import delete_and_wait, deployment
from tests.integration.test_execution_status import (
    DEPLOYMENT,
    TIMEOUT,
    Federation,
    _applied_is,
    _until,
    federation,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]


def _replicas(obj: Obj | None) -> Any:
    return (obj or {}).get("spec", {}).get("replicas")


async def test_two_works_naming_one_object_neither_overwrites_nor_deletes_the_others(
    multicluster: Environment, namespace: str
) -> None:
    async with federation(multicluster, namespace) as fed:
        first, second = f"{namespace}-first", f"{namespace}-second"
        await fed.create_work(fed.work("member1", first, deployment("shared", namespace, 2)))
        created = await _until(lambda: fed.member_object("member1", "shared"))
        await _until(lambda: _applied_is(fed, first, "True"))

        await fed.create_work(fed.work("member1", second, deployment("shared", namespace, 5)))
        refused = await _until(lambda: _applied_is(fed, second, "False"))
        assert f"belongs to Work {execution_namespace('member1')}/{first}" in refused["message"]
        current = await fed.member_object("member1", "shared")
        assert current is not None
        assert current["metadata"]["annotations"][WORK_NAME_ANNOTATION] == first
        assert _replicas(current) == 2

        await delete_and_wait(
            fed.host, WORK_GVK, second, execution_namespace("member1"), timeout=TIMEOUT
        )
        left = await fed.member_object("member1", "shared")
        assert left is not None, "the second Work's deletion removed the first Work's object"
        assert left["metadata"]["uid"] == created["metadata"]["uid"]
        assert _replicas(left) == 2

        await delete_and_wait(
            fed.host, WORK_GVK, first, execution_namespace("member1"), timeout=TIMEOUT
        )
        await _until(lambda: fed.gone(DEPLOYMENT, "shared", namespace, "member1"))


async def _two_manifest_work(fed: Federation, name: str, namespace: str) -> Obj:
    work = fed.work("member1", name, deployment("kept", namespace, 1))
    extra = fed.work("member1", name, deployment("dropped", namespace, 1))
    work["spec"]["workload"]["manifests"] += extra["spec"]["workload"]["manifests"]
    return work


async def test_a_manifest_dropped_from_a_work_is_deleted_from_the_member(
    multicluster: Environment, namespace: str
) -> None:
    async with federation(multicluster, namespace) as fed:
        name = f"{namespace}-two"
        await fed.create_work(await _two_manifest_work(fed, name, namespace))
        await _until(lambda: fed.member_object("member1", "dropped"))
        kept = await _until(lambda: fed.member_object("member1", "kept"))

        async def statuses() -> int | None:
            work = await fed.host.get(WORK_GVK, name, namespace=execution_namespace("member1"))
            entries = (work.get("status") or {}).get("manifestStatuses") or []
            return len(entries) if len(entries) == 2 else None

        await _until(statuses)
        work = await fed.host.get(WORK_GVK, name, namespace=execution_namespace("member1"))
        work["spec"]["workload"]["manifests"] = work["spec"]["workload"]["manifests"][:1]
        await fed.host.update(work)

        await _until(lambda: fed.gone(DEPLOYMENT, "dropped", namespace, "member1"))
        still = await fed.member_object("member1", "kept")
        assert still is not None
        assert still["metadata"]["uid"] == kept["metadata"]["uid"]
        await _until(lambda: _applied_is(fed, name, "True"))
