"""Which member objects a Work may write and delete: those its annotations say are its own.

The execution controller runs here over testenv's fake apiserver: a host holding the Works and the
Cluster, one member, both with running caches. Two Works naming one member object must not take it
from each other; a member object naming no Work, another Work or another resource template is not
this Work's; manifests a Work drops are deleted from the member, and what the controller remembers
of a Work goes with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Final

import anyio
import pytest

from controllers.api import (
    CLUSTER_GVK,
    CONFLICT_RESOLUTION_ANNOTATION,
    EXECUTION_CONTROLLER_FINALIZER,
    MANAGED_LABEL,
    RESOURCE_TEMPLATE_UID_ANNOTATION,
    SYNC_MODE_PULL,
    SYNC_MODE_PUSH,
    WORK_APPLIED_CONDITION,
    WORK_GVK,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
    crd_paths,
)
from controllers.clusterscope import ClusterScope
from controllers.execution import ApplyFailed, ExecutionController
from controllers.execution.controller import _WarmOnWork
from controllers.interpreter import Interpreter
from reconcile import (
    GVK,
    ByObject,
    Cluster,
    Event,
    EventType,
    NotFound,
    Obj,
    Request,
    get_condition,
)
from testenv import eventually
from testenv.fake import FakeClient

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP: Final = GVK("", "v1", "ConfigMap")
MEMBER: Final = "member1"
ES: Final = "karmada-es-member1"
NS: Final = "shop"


@dataclass
class _Recorder:
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def event(self, obj: Any, kind: str, reason: str, message: str) -> None:
        self.events.append((kind, reason, message))


@dataclass
class Harness:
    host: Cluster
    member: Cluster
    execution: ExecutionController
    recorder: _Recorder

    async def put_work(
        self,
        name: str,
        *manifests: Obj,
        conflict: str = "abort",
        labels: dict[str, str] | None = None,
    ) -> None:
        """Create or replace the Work ``name`` carrying ``manifests``; wait for the host cache."""
        work: Obj = {
            "apiVersion": WORK_GVK.api_version,
            "kind": WORK_GVK.kind,
            "metadata": {
                "name": name,
                "namespace": ES,
                "annotations": {CONFLICT_RESOLUTION_ANNOTATION: conflict},
                "labels": dict(labels or {}),
            },
            "spec": {"workload": {"manifests": list(manifests)}},
        }
        try:
            current = await self.host.api_reader.get(WORK_GVK, name, namespace=ES)
        except NotFound:
            written = await self.host.api_reader.create(work)
        else:
            current["spec"] = work["spec"]
            written = await self.host.api_reader.update(current)
        await self.settled(name, written)

    async def settled(self, name: str, written: Obj | None = None) -> None:
        """Wait until the host cache holds the Work as the apiserver has it now."""
        if written is None:
            try:
                written = await self.host.api_reader.get(WORK_GVK, name, namespace=ES)
            except NotFound:
                written = None

        async def caught_up() -> bool:
            try:
                cached = await self.host.client.get(WORK_GVK, name, namespace=ES)
            except NotFound:
                return written is None
            version = (written or {}).get("metadata", {}).get("resourceVersion")
            return bool(cached["metadata"].get("resourceVersion") == version)

        await eventually(caught_up, timeout=5)

    async def reconcile(self, name: str) -> BaseException | None:
        """One reconcile of the Work ``name``; the error it raised, if any."""
        try:
            await self.execution.reconcile(Request(name, ES))
        except Exception as error:  # the test looks at it
            return error
        finally:
            await self.settled(name)
        return None

    async def delete_work(self, name: str) -> None:
        """Delete the Work and reconcile it until it is gone."""
        await self.host.api_reader.delete(WORK_GVK, name, namespace=ES)
        await self.settled(name)
        assert await self.reconcile(name) is None
        with pytest.raises(NotFound):
            await self.host.api_reader.get(WORK_GVK, name, namespace=ES)

    async def configmap(self, name: str) -> Obj | None:
        try:
            return await self.member.api_reader.get(CONFIGMAP, name, namespace=NS)
        except NotFound:
            return None

    async def switch(self, mode: str) -> tuple[Obj, Obj]:
        """Set member1's Cluster syncMode; its versions before and after, once the host cache
        has the new one."""
        before = await self.host.api_reader.get(CLUSTER_GVK, MEMBER)
        after = await self.host.api_reader.update({**before, "spec": {"syncMode": mode}})

        async def cached() -> bool:
            found = await self.host.client.get(CLUSTER_GVK, MEMBER)
            return bool(
                found["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]
            )

        await eventually(cached, timeout=5)
        return before, after

    async def applied(self, name: str) -> dict[str, Any]:
        work = await self.host.api_reader.get(WORK_GVK, name, namespace=ES)
        return dict(get_condition(work, WORK_APPLIED_CONDITION) or {})


def configmap(name: str, value: str, *, template: str | None = None) -> Obj:
    """A ConfigMap manifest, from the resource template ``template`` (its uid) if given."""
    metadata: Obj = {"name": name, "namespace": NS, "labels": {MANAGED_LABEL: "true"}}
    if template is not None:
        metadata["annotations"] = {RESOURCE_TEMPLATE_UID_ANNOTATION: template}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"v": value}}


def claimed(name: str, value: str, work: str | None, *, template: str | None = None) -> Obj:
    """A member ConfigMap labelled managed, naming ``work`` (None: no Work annotations)."""
    obj = configmap(name, value, template=template)
    if work is not None:
        annotations = obj["metadata"].setdefault("annotations", {})
        annotations.update({WORK_NAME_ANNOTATION: work, WORK_NAMESPACE_ANNOTATION: ES})
    return obj


def _owner(obj: Obj | None) -> str | None:
    return ((obj or {}).get("metadata", {}).get("annotations") or {}).get(WORK_NAME_ANNOTATION)


@contextlib.asynccontextmanager
async def running(*member_objects: Obj, works: ByObject | None = None) -> AsyncIterator[Harness]:
    """The execution controller over a fake host (with a Ready member1) and a fake member;
    ``works`` scopes the host cache's Works (as a sharded replica's holds its own only)."""
    host = Cluster("", client=FakeClient(crds=crd_paths()))
    if works is not None:
        host.cache.configure(WORK_GVK, works)
    member = Cluster(MEMBER, client=FakeClient(objects=member_objects))
    recorder = _Recorder()
    context: Any = SimpleNamespace(
        manager=SimpleNamespace(client=host.client, cache=host.cache),
        members=SimpleNamespace(get=lambda name: member if name == MEMBER else None),
        interpreter=Interpreter(),
        recorder=lambda name: recorder,
        sharding=None,
        scope=ClusterScope.push(),
    )
    execution = ExecutionController(context, sync_timeout=5)
    async with anyio.create_task_group() as group:
        await group.start(host.cache.run)
        await group.start(member.cache.run)
        cluster: Obj = {"apiVersion": CLUSTER_GVK.api_version, "kind": "Cluster"}
        cluster["metadata"] = {"name": MEMBER}
        await host.api_reader.create(cluster)
        ready = {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ok"}
        ready["lastTransitionTime"] = "2026-01-01T00:00:00Z"
        await host.api_reader.patch_status(CLUSTER_GVK, MEMBER, {"status": {"conditions": [ready]}})
        yield Harness(host, member, execution, recorder)
        group.cancel_scope.cancel()


# --- two Works, one member object --------------------------------------------------------------


async def test_under_abort_a_work_leaves_the_object_another_work_applied() -> None:
    async with running() as h:
        await h.put_work("a", configmap("shared", "from-a"))
        assert await h.reconcile("a") is None
        await h.put_work("b", configmap("shared", "from-b"))

        assert isinstance(await h.reconcile("b"), ApplyFailed)

        left = await h.configmap("shared")
        assert left is not None
        assert left["data"] == {"v": "from-a"}
        assert _owner(left) == "a"
        condition = await h.applied("b")
        assert condition["status"] == "False"
        assert f"Work {ES}/a" in condition["message"]
        assert any(
            kind == "Warning" and f"Work {ES}/a" in message
            for kind, _, message in h.recorder.events
        )


async def test_overwrite_never_takes_an_object_from_another_existing_work() -> None:
    # Two Works allowed to overwrite would otherwise take the object in turns for ever (each
    # write enqueues the other through the member watch). Overwrite adopts objects no Work holds.
    async with running(claimed("orphan", "old", "gone")) as h:
        await h.put_work("a", configmap("shared", "from-a"))
        assert await h.reconcile("a") is None
        await h.put_work(
            "b", configmap("shared", "from-b"), configmap("orphan", "new"), conflict="overwrite"
        )

        assert isinstance(await h.reconcile("b"), ApplyFailed)

        assert _owner(await h.configmap("shared")) == "a"
        adopted = await h.configmap("orphan")
        assert adopted is not None
        assert _owner(adopted) == "b"
        assert adopted["data"] == {"v": "new"}


async def test_overwrite_checks_a_work_outside_the_cache_before_taking_its_object() -> None:
    # Sharded, a replica's host cache holds only its own keys' Works: one missing from it may
    # well exist, held by another replica.
    mine = {"shard": "me"}
    async with running(
        claimed("shared", "theirs", "a"), works=ByObject(label_selector="shard=me")
    ) as h:
        await h.host.api_reader.create(
            {
                "apiVersion": WORK_GVK.api_version,
                "kind": WORK_GVK.kind,
                "metadata": {"name": "a", "namespace": ES},
                "spec": {"workload": {"manifests": [configmap("shared", "theirs")]}},
            }
        )
        await h.put_work("b", configmap("shared", "mine"), conflict="overwrite", labels=mine)

        assert isinstance(await h.reconcile("b"), ApplyFailed)
        assert _owner(await h.configmap("shared")) == "a"


async def test_deleting_a_work_leaves_the_object_another_work_applied() -> None:
    async with running() as h:
        await h.put_work("a", configmap("shared", "from-a"))
        assert await h.reconcile("a") is None
        await h.put_work("b", configmap("shared", "from-b"))
        await h.reconcile("b")

        await h.delete_work("b")

        left = await h.configmap("shared")
        assert _owner(left) == "a"


async def test_an_object_naming_no_work_is_not_this_works() -> None:
    # Labelled managed, but without the Work annotations: not "this Work" by default.
    async with running(claimed("bare", "theirs", None)) as h:
        await h.put_work("a", configmap("bare", "ours"))

        assert isinstance(await h.reconcile("a"), ApplyFailed)
        assert "names no Work" in (await h.applied("a"))["message"]
        await h.delete_work("a")

        left = await h.configmap("bare")
        assert left is not None
        assert left["data"] == {"v": "theirs"}


async def test_an_object_of_another_resource_template_is_a_conflict() -> None:
    async with running(claimed("cm", "old", "a", template="uid-old")) as h:
        await h.put_work("a", configmap("cm", "new", template="uid-new"))

        assert isinstance(await h.reconcile("a"), ApplyFailed)
        assert "uid-old" in (await h.applied("a"))["message"]
        await h.delete_work("a")
        assert await h.configmap("cm") is not None, "another template's object is not deleted"

        await h.put_work("a", configmap("cm", "new", template="uid-new"), conflict="overwrite")
        assert await h.reconcile("a") is None
        taken = await h.configmap("cm")
        assert taken is not None
        assert taken["data"] == {"v": "new"}
        annotations = taken["metadata"]["annotations"]
        assert annotations[RESOURCE_TEMPLATE_UID_ANNOTATION] == "uid-new"


# --- dropped manifests and what is remembered ---------------------------------------------------


async def test_a_dropped_manifest_is_deleted_from_the_member_unless_another_work_holds_it() -> None:
    async with running() as h:
        await h.put_work(
            "a", configmap("kept", "1"), configmap("dropped", "2"), configmap("moved", "3")
        )
        assert await h.reconcile("a") is None
        # "moved" is Work b's now (taken over by hand, say): dropping it from a must not delete it.
        await h.member.api_reader.patch(
            CONFIGMAP,
            "moved",
            {"metadata": {"annotations": {WORK_NAME_ANNOTATION: "b"}}},
            namespace=NS,
        )

        await h.put_work("a", configmap("kept", "1"))
        assert await h.reconcile("a") is None

        assert await h.configmap("kept") is not None
        assert await h.configmap("dropped") is None
        assert _owner(await h.configmap("moved")) == "b"
        assert {ref.name for ref in h.execution.records.refs()} == {"kept"}
        work = await h.host.api_reader.get(WORK_GVK, "a", namespace=ES)
        names = [entry["identifier"]["name"] for entry in work["status"]["manifestStatuses"]]
        assert names == ["kept"]


async def test_a_dropped_manifest_that_cannot_be_deleted_is_tried_again() -> None:
    async with running() as h:
        await h.put_work("a", configmap("kept", "1"), configmap("dropped", "2"))
        assert await h.reconcile("a") is None
        await h.put_work("a", configmap("kept", "1"))
        delete = h.member.api_reader.delete

        async def refused(*args: Any, **kwargs: Any) -> Any:
            raise TimeoutError("member timed out")

        h.member.api_reader.delete = refused  # type: ignore[method-assign]
        await h.reconcile("a")
        assert "dropped" in (await h.applied("a"))["message"]
        h.member.api_reader.delete = delete  # type: ignore[method-assign]

        assert await h.reconcile("a") is None
        assert await h.configmap("dropped") is None


async def test_a_work_removed_without_its_finalizer_is_forgotten() -> None:
    async with running() as h:
        await h.put_work("a", configmap("cm", "1"))
        assert await h.reconcile("a") is None
        assert h.execution.records.refs()
        work = await h.host.api_reader.get(WORK_GVK, "a", namespace=ES)
        work["metadata"]["finalizers"] = []
        await h.host.api_reader.update(work)
        await h.host.api_reader.delete(WORK_GVK, "a", namespace=ES)
        await h.settled("a")

        assert await h.reconcile("a") is None
        assert not h.execution.records.refs()


async def test_a_work_whose_cluster_is_gone_deletes_through_a_connection_still_open() -> None:
    async with running() as h:
        await h.put_work("a", configmap("cm", "1"))
        assert await h.reconcile("a") is None
        await h.host.api_reader.delete(CLUSTER_GVK, MEMBER)

        async def cluster_gone() -> bool:
            try:
                await h.host.client.get(CLUSTER_GVK, MEMBER)
            except NotFound:
                return True
            return False

        await eventually(cluster_gone, timeout=5)
        await h.delete_work("a")

        assert await h.configmap("cm") is None
        assert not h.execution.records.refs()


async def test_a_work_leaving_the_host_cache_is_forgotten() -> None:
    # Deleted, or (sharded) moved to another replica, which writes its objects from then on.
    async with running() as h:
        await h.put_work("a", configmap("cm", "1"))
        assert await h.reconcile("a") is None
        work = await h.host.api_reader.get(WORK_GVK, "a", namespace=ES)

        _WarmOnWork(h.execution).on_delete(work)

        assert not h.execution.records.refs()


# --- Pull clusters: their Works are their agent's ------------------------------------------------


async def test_a_pull_clusters_work_gets_no_finalizer_no_status_and_no_member_write() -> None:
    # Karmada's controller-manager takes only Works within Push clusters; the agent in a Pull
    # member applies its Works, adds the finalizer and writes their status.
    async with running() as h:
        await h.switch(SYNC_MODE_PULL)
        await h.put_work("a", configmap("cm", "1"))
        work = await h.host.api_reader.get(WORK_GVK, "a", namespace=ES)
        assert not h.execution.work_served(Event(EventType.CREATE, work))

        assert await h.reconcile("a") is None

        left = await h.host.api_reader.get(WORK_GVK, "a", namespace=ES)
        assert left["metadata"].get("finalizers") in (None, [])
        assert "status" not in left or not left["status"]
        assert left["metadata"]["resourceVersion"] == work["metadata"]["resourceVersion"]
        assert await h.configmap("cm") is None


async def test_a_work_applied_before_its_cluster_turned_pull_is_left_to_the_agent() -> None:
    async with running() as h:
        await h.put_work("a", configmap("cm", "1"))
        assert await h.reconcile("a") is None
        await h.switch(SYNC_MODE_PULL)
        await h.put_work("a", configmap("cm", "2"))
        assert await h.reconcile("a") is None
        cm = await h.configmap("cm")
        assert cm is not None
        assert cm["data"] == {"v": "1"}  # not this process's to update any more

        await h.host.api_reader.delete(WORK_GVK, "a", namespace=ES)
        await h.settled("a")
        assert await h.reconcile("a") is None
        # Nor to clean up: the agent removes the objects, then the finalizer.
        work = await h.host.api_reader.get(WORK_GVK, "a", namespace=ES)
        assert work["metadata"]["finalizers"] == [EXECUTION_CONTROLLER_FINALIZER]
        assert await h.configmap("cm") is not None


async def test_a_cluster_switched_back_to_push_enqueues_its_works_and_they_apply() -> None:
    async with running() as h:
        push, pull = await h.switch(SYNC_MODE_PULL)
        assert not h.execution.cluster_served(Event(EventType.UPDATE, pull, push))
        assert not h.execution.cluster_served(Event(EventType.CREATE, pull))
        await h.put_work("a", configmap("cm", "1"))
        assert await h.reconcile("a") is None
        assert await h.configmap("cm") is None

        _, back = await h.switch(SYNC_MODE_PUSH)
        assert h.execution.cluster_served(Event(EventType.UPDATE, back, pull))
        assert h.execution.works_of_cluster(back) == [Request("a", ES)]
        assert await h.reconcile("a") is None
        cm = await h.configmap("cm")
        assert cm is not None
        assert cm["data"] == {"v": "1"}


async def test_an_agent_scoped_to_its_cluster_applies_that_pull_clusters_works() -> None:
    async with running() as h:
        await h.switch(SYNC_MODE_PULL)
        h.execution.scope = ClusterScope.only(MEMBER)
        await h.put_work("a", configmap("cm", "1"))
        assert await h.reconcile("a") is None
        assert await h.configmap("cm") is not None
        assert (await h.applied("a"))["status"] == "True"
