"""Execution and status controllers against a real host and two real member apiservers.

testenv runs no kube-controller-manager: member Deployments get no status by themselves, so the
tests write it through the members' status subresource, as a member's controllers would.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import pytest

import controllers.execution
import controllers.status
from controllers.api import (
    CLUSTER_GVK,
    CONFLICT_RESOLUTION_ANNOTATION,
    EXECUTION_CONTROLLER_FINALIZER,
    FULLY_APPLIED_CONDITION,
    MANAGED_LABEL,
    RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
    RETAIN_REPLICAS_LABEL,
    WORK_APPLIED_CONDITION,
    WORK_GVK,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
    crd_paths,
    execution_namespace,
)
from controllers.cluster import (
    ClusterProvider,
    ClusterStatusOptions,
    Members,
    setup_cluster_controller,
    setup_cluster_status_controller,
)
from controllers.context import Context
from controllers.interpreter.native_status import GENERATION_ANNOTATION
from reconcile import (
    GVK,
    AlreadyExists,
    Client,
    ClusterConfig,
    Conflict,
    Manager,
    ManagerOptions,
    NotFound,
    Obj,
    get_condition,
    is_condition_true,
)
from testenv import Environment, eventually
from tests.builders import admin_client, delete_and_wait, deployment, gone

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

DEPLOYMENT: Final = GVK("apps", "v1", "Deployment")
NAMESPACE: Final = GVK("", "v1", "Namespace")
TIMEOUT: Final = 30.0
MEMBERS: Final = ("member1", "member2")


@dataclass
class Federation:
    """A running host manager with the cluster, execution and status controllers."""

    host: Client
    members: dict[str, Client]
    registry: Members[ClusterProvider]
    namespace: str
    works: list[tuple[str, str]] = field(default_factory=list)

    def work(
        self,
        cluster: str,
        name: str,
        manifest: Obj,
        *,
        conflict: str = "abort",
        preserve: bool = False,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
    ) -> Obj:
        """A Work for ``cluster`` as the binding controller makes them."""
        namespace = execution_namespace(cluster)
        meta = manifest["metadata"]
        meta.setdefault("labels", {})[MANAGED_LABEL] = "true"
        meta.setdefault("annotations", {}).update(
            {
                WORK_NAME_ANNOTATION: name,
                WORK_NAMESPACE_ANNOTATION: namespace,
                CONFLICT_RESOLUTION_ANNOTATION: conflict,
            }
        )
        spec: Obj = {"workload": {"manifests": [manifest]}}
        if preserve:
            spec["preserveResourcesOnDeletion"] = True
        metadata: Obj = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
        metadata["annotations"] = dict(annotations or {})
        return {
            "apiVersion": "work.karmada.io/v1alpha1",
            "kind": "Work",
            "metadata": metadata,
            "spec": spec,
        }

    async def create_work(self, work: Obj) -> Obj:
        """Create a Work (removed again when the test ends)."""
        created = await self.host.create(work)
        self.works.append((work["metadata"]["namespace"], work["metadata"]["name"]))
        return created

    async def update_manifest(self, cluster: str, name: str, change: Callable[[Obj], None]) -> None:
        """Change a Work's manifest in place (retried on conflicts)."""
        for _ in range(5):
            work = await self.host.get(WORK_GVK, name, namespace=execution_namespace(cluster))
            change(work["spec"]["workload"]["manifests"][0])
            with contextlib.suppress(Conflict):
                await self.host.update(work)
                return
        raise AssertionError(f"could not update Work {name}")

    async def member_object(self, cluster: str, name: str) -> Obj | None:
        """The Deployment ``name`` of the test namespace in ``cluster``, None when absent."""
        try:
            return await self.members[cluster].get(DEPLOYMENT, name, namespace=self.namespace)
        except NotFound:
            return None

    async def applied(self, cluster: str, name: str) -> dict[str, Any] | None:
        """The Work's Applied condition once it is set."""
        work = await self.host.get(WORK_GVK, name, namespace=execution_namespace(cluster))
        condition = get_condition(work, WORK_APPLIED_CONDITION)
        return dict(condition) if condition else None

    async def gone(self, gvk: GVK, name: str, namespace: str | None, cluster: str = "") -> bool:
        """Whether the object no longer exists (on the host, or in ``cluster``)."""
        return await gone(self.members[cluster] if cluster else self.host, gvk, name, namespace)

    async def member_status(self, cluster: str, name: str, **status: int) -> None:
        """Write a member Deployment's status, as its deployment controller would."""
        await self.members[cluster].patch_status(
            DEPLOYMENT, name, {"status": status}, namespace=self.namespace
        )


async def _ready_and_connected(
    host: Client, registry: Members[ClusterProvider], names: tuple[str, ...]
) -> bool:
    for name in names:
        cluster = await host.get(CLUSTER_GVK, name)
        if registry.get(name) is None or not is_condition_true(cluster, "Ready"):
            return False
        if await gone(host, NAMESPACE, execution_namespace(name)):
            return False
    return True


async def _remove_works(federation: Federation) -> None:
    """Delete the test's Works while the controllers still run, so none is left with a finalizer;
    one that stays fails the test (it would hold its execution namespace for later tests)."""
    for namespace, name in federation.works:
        with contextlib.suppress(NotFound):
            await federation.host.delete(WORK_GVK, name, namespace=namespace)
    for namespace, name in federation.works:
        await delete_and_wait(federation.host, WORK_GVK, name, namespace, timeout=TIMEOUT)


@contextlib.asynccontextmanager
async def federation(env: Environment, namespace: str) -> AsyncIterator[Federation]:
    """Start the host's controllers against member1 and member2; stop them afterwards."""
    host_plane = env.host
    await host_plane.install_crds(crd_paths())
    async with contextlib.AsyncExitStack() as stack:
        host = await stack.enter_async_context(await admin_client(host_plane))
        members = {}
        for name in MEMBERS:
            plane = env.members[name]
            members[name] = await stack.enter_async_context(await admin_client(plane))
            await plane.create_namespace(namespace)
            cluster = {
                "apiVersion": "cluster.karmada.io/v1alpha1",
                "kind": "Cluster",
                "metadata": {"name": name},
                "spec": {"apiEndpoint": plane.url, "syncMode": "Push"},
            }
            await host.apply(cluster, field_manager="test-execution", force=True)
        config = await ClusterConfig.from_kubeconfig(
            host_plane.kubeconfig, temp_dir=host_plane.directory / "client"
        )
        manager = Manager(config, options=ManagerOptions(metrics_bind_address="0"))
        kubeconfigs = {name: env.members[name].kubeconfig for name in MEMBERS}
        registry = Members.of(
            manager, kubeconfigs=kubeconfigs, temp_dir=host_plane.directory / "client"
        )
        context = Context(manager, registry)
        setup_cluster_controller(manager, registry)
        setup_cluster_status_controller(manager, registry, ClusterStatusOptions(1, 0, 0))
        controllers.execution.setup(context)
        controllers.status.setup(context)
        fed = Federation(host, members, registry, namespace)
        async with anyio.create_task_group() as group:
            await group.start(manager.start)
            try:
                await eventually(
                    lambda: _ready_and_connected(host, registry, MEMBERS), timeout=TIMEOUT
                )
                yield fed
            finally:
                with anyio.CancelScope(shield=True):
                    await _remove_works(fed)
                manager.stop()


async def _until(probe: Callable[[], Awaitable[Any]]) -> Any:
    return await eventually(probe, timeout=TIMEOUT)


# --- applying and keeping in sync -----------------------------------------------------------------


async def test_a_member_object_stripped_of_the_managed_label_is_left_and_reported(
    multicluster: Environment, namespace: str
) -> None:
    # The member objects are watched through a label-scoped informer: stripping the label is,
    # to it, a DELETED event (the apiserver sends one when an object leaves a selection; see
    # test_fake_parity). The object is not Karmada's any more: like Karmada's execution
    # controller (conflict resolution "abort" by default) it is neither deleted nor overwritten,
    # and the Work says so; labelled again by hand, it is the Work's again.
    async with federation(multicluster, namespace) as fed:
        name = f"{namespace}-stripped"
        await fed.create_work(fed.work("member1", name, deployment("stripped", namespace, 2)))
        created = await _until(lambda: fed.member_object("member1", "stripped"))
        assert created["metadata"]["labels"][MANAGED_LABEL] == "true"
        await _until(lambda: _applied_is(fed, name, "True"))
        member = fed.members["member1"]
        await member.patch(created, {"metadata": {"labels": {MANAGED_LABEL: None}}})

        refused = await _until(lambda: _applied_is(fed, name, "False"))
        assert "not managed by Karmada" in refused["message"]
        left = await fed.member_object("member1", "stripped")
        assert left is not None, "a member object the Work does not own must not be deleted"
        assert left["metadata"]["uid"] == created["metadata"]["uid"]
        assert MANAGED_LABEL not in left["metadata"]["labels"]

        await member.patch(created, {"metadata": {"labels": {MANAGED_LABEL: "true"}}})
        await _until(lambda: _applied_is(fed, name, "True"))


async def _applied_is(fed: Federation, name: str, status: str) -> dict[str, Any] | None:
    condition = await fed.applied("member1", name)
    return condition if condition and condition["status"] == status else None


async def test_a_work_is_applied_then_kept_in_sync_with_the_member(
    multicluster: Environment, namespace: str
) -> None:
    async with federation(multicluster, namespace) as fed:
        name = f"{namespace}-web"
        work = await fed.create_work(fed.work("member1", name, deployment("web", namespace, 2)))
        created = await _until(lambda: fed.member_object("member1", "web"))
        assert created["metadata"]["labels"][MANAGED_LABEL] == "true"
        assert created["metadata"]["annotations"][WORK_NAME_ANNOTATION] == name
        condition = await _until(lambda: fed.applied("member1", name))
        assert (condition["status"], condition["reason"]) == ("True", "AppliedSuccessful")
        stored = await fed.host.get(WORK_GVK, name, namespace=work["metadata"]["namespace"])
        assert EXECUTION_CONTROLLER_FINALIZER in stored["metadata"]["finalizers"]
        assert await fed.member_object("member2", "web") is None, "only the Work's own member"

        # Deleted by hand in the member: re-created.
        await fed.members["member1"].delete(DEPLOYMENT, "web", namespace=namespace)

        async def recreated() -> Obj | None:
            current = await fed.member_object("member1", "web")
            uid = created["metadata"]["uid"]
            return current if current and current["metadata"]["uid"] != uid else None

        await _until(recreated)

        # A label added in the member stays; an edited managed field is reverted.
        member = fed.members["member1"]
        await member.patch(
            DEPLOYMENT, "web", {"metadata": {"labels": {"team": "payments"}}}, namespace=namespace
        )
        patch = {"spec": {"replicas": 7, "template": {"spec": {"containers": [
            {"name": "nginx", "image": "nginx:tampered"}
        ]}}}}  # fmt: skip
        await member.patch(DEPLOYMENT, "web", patch, namespace=namespace)

        async def reverted() -> Obj | None:
            current = await fed.member_object("member1", "web")
            spec = (current or {}).get("spec", {})
            image = spec.get("template", {}).get("spec", {}).get("containers", [{}])[0].get("image")
            return current if image == "nginx:1.25" and spec.get("replicas") == 2 else None

        current = await _until(reverted)
        assert current["metadata"]["labels"]["team"] == "payments"

        # The Work changes: the member follows.
        def new_image(manifest: Obj) -> None:
            manifest["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"

        await fed.update_manifest("member1", name, new_image)

        async def updated() -> Obj | None:
            current = await fed.member_object("member1", "web")
            containers = (current or {}).get("spec", {}).get("template", {}).get("spec", {})
            image = containers.get("containers", [{}])[0].get("image")
            return current if image == "nginx:1.26" else None

        current = await _until(updated)
        assert current["metadata"]["labels"]["team"] == "payments"


async def test_retain_keeps_member_replicas_only_with_the_retain_label(
    multicluster: Environment, namespace: str
) -> None:
    async with federation(multicluster, namespace) as fed:
        manifest = deployment("scaled", namespace, 2, labels={RETAIN_REPLICAS_LABEL: "true"})
        name = f"{namespace}-scaled"
        await fed.create_work(fed.work("member1", name, manifest))
        await _until(lambda: fed.member_object("member1", "scaled"))
        member = fed.members["member1"]
        # An HPA in the member scales it: the member's replicas are kept.
        await member.patch(DEPLOYMENT, "scaled", {"spec": {"replicas": 5}}, namespace=namespace)

        def new_image(manifest: Obj) -> None:
            manifest["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"

        await fed.update_manifest("member1", name, new_image)

        async def image_updated() -> Obj | None:
            current = await fed.member_object("member1", "scaled")
            spec = (current or {}).get("spec", {})
            image = spec.get("template", {}).get("spec", {}).get("containers", [{}])[0].get("image")
            return current if image == "nginx:1.27" else None

        current = await _until(image_updated)
        assert current["spec"]["replicas"] == 5


# --- conflicts with objects Karmada does not manage ----------------------------------------------


async def test_an_unmanaged_object_is_left_alone_unless_the_work_may_overwrite_it(
    multicluster: Environment, namespace: str
) -> None:
    async with federation(multicluster, namespace) as fed:
        member = fed.members["member1"]
        legacy = await member.create(deployment("legacy", namespace, 2, image="nginx:1.0"))
        name = f"{namespace}-legacy"
        await fed.create_work(fed.work("member1", name, deployment("legacy", namespace, 2)))

        async def refused() -> dict[str, Any] | None:
            condition = await fed.applied("member1", name)
            return condition if condition and condition["status"] == "False" else None

        condition = await _until(refused)
        assert condition["reason"] == "AppliedFailed"
        assert "not managed by Karmada" in condition["message"]
        assert f"{CONFLICT_RESOLUTION_ANNOTATION}=overwrite" in condition["message"]
        untouched = await fed.member_object("member1", "legacy")
        assert untouched is not None
        assert untouched["metadata"]["resourceVersion"] == legacy["metadata"]["resourceVersion"]

        def overwrite(manifest: Obj) -> None:
            manifest["metadata"]["annotations"][CONFLICT_RESOLUTION_ANNOTATION] = "overwrite"

        await fed.update_manifest("member1", name, overwrite)

        async def taken_over() -> Obj | None:
            current = await fed.member_object("member1", "legacy")
            labels = (current or {}).get("metadata", {}).get("labels", {})
            return current if labels.get(MANAGED_LABEL) == "true" else None

        current = await _until(taken_over)
        assert current["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
        assert current["metadata"]["uid"] == legacy["metadata"]["uid"], "updated, not replaced"

        async def applied() -> bool:
            condition = await fed.applied("member1", name)
            return bool(condition and condition["status"] == "True")

        await _until(applied)


async def test_a_malformed_manifest_fails_only_its_own_work(
    multicluster: Environment, namespace: str
) -> None:
    async with federation(multicluster, namespace) as fed:
        bad, good = f"{namespace}-bad", f"{namespace}-good"
        kindless = {"apiVersion": "apps/v1", "metadata": {"name": "kindless"}}
        await fed.create_work(fed.work("member1", bad, kindless))
        await fed.create_work(fed.work("member1", good, deployment("good", namespace, 2)))

        async def refused() -> str | None:
            condition = await fed.applied("member1", bad)
            return condition["message"] if condition and condition["status"] == "False" else None

        assert "no apiVersion/kind" in await _until(refused)
        await _until(lambda: fed.member_object("member1", "good"))


# --- deletion ------------------------------------------------------------------------------------


async def test_deleting_a_work_deletes_its_object_or_releases_it_when_preserved(
    multicluster: Environment, namespace: str
) -> None:
    async with federation(multicluster, namespace) as fed:
        plain, kept = f"{namespace}-plain", f"{namespace}-kept"
        await fed.create_work(fed.work("member2", plain, deployment("plain", namespace, 2)))
        preserved = fed.work("member2", kept, deployment("kept", namespace, 2), preserve=True)
        await fed.create_work(preserved)
        await _until(lambda: fed.member_object("member2", "plain"))
        await _until(lambda: fed.member_object("member2", "kept"))
        await fed.members["member2"].patch(
            DEPLOYMENT, "kept", {"metadata": {"labels": {"team": "ops"}}}, namespace=namespace
        )

        es = execution_namespace("member2")
        await fed.host.delete(WORK_GVK, plain, namespace=es)
        await fed.host.delete(WORK_GVK, kept, namespace=es)
        await _until(lambda: fed.gone(DEPLOYMENT, "plain", namespace, "member2"))
        await _until(lambda: fed.gone(WORK_GVK, plain, es))
        await _until(lambda: fed.gone(WORK_GVK, kept, es))

        released = await fed.member_object("member2", "kept")
        assert released is not None, "preserveResourcesOnDeletion keeps the object"
        labels = released["metadata"].get("labels", {})
        annotations = released["metadata"].get("annotations", {})
        assert MANAGED_LABEL not in labels
        assert labels["team"] == "ops"
        assert not {WORK_NAME_ANNOTATION, WORK_NAMESPACE_ANNOTATION} & set(annotations)
        assert CONFLICT_RESOLUTION_ANNOTATION not in annotations


async def test_an_unavailable_cluster_fails_the_work_and_blocks_deletion_until_it_is_removed(
    multicluster: Environment, namespace: str
) -> None:
    async with federation(multicluster, namespace) as fed:
        # A Work for a cluster that does not exist: Applied=False says so; deleting it works.
        ghost = f"ghost-{namespace[-6:]}"
        with contextlib.suppress(AlreadyExists):
            await fed.host.create(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": f"karmada-es-{ghost}"},
                }
            )
        orphan = f"{namespace}-orphan"
        await fed.create_work(fed.work(ghost, orphan, deployment("orphan", namespace, 2)))

        async def failed(cluster: str, name: str) -> str | None:
            condition = await fed.applied(cluster, name)
            return condition["message"] if condition and condition["status"] == "False" else None

        assert f"cluster {ghost} does not exist" in await _until(lambda: failed(ghost, orphan))
        await fed.host.delete(WORK_GVK, orphan, namespace=execution_namespace(ghost))
        await _until(lambda: fed.gone(WORK_GVK, orphan, execution_namespace(ghost)))

        # A Cluster that cannot be connected to: Applied=False, and deleting the Work waits
        # until the Cluster itself is deleted.
        broken = f"broken-{namespace[-6:]}"
        await fed.host.create(
            {
                "apiVersion": "cluster.karmada.io/v1alpha1",
                "kind": "Cluster",
                "metadata": {"name": broken},
                "spec": {"apiEndpoint": "https://127.0.0.1:1", "syncMode": "Push"},
            }
        )
        await _until(lambda: _exists(fed.host, NAMESPACE, execution_namespace(broken)))
        stuck = f"{namespace}-stuck"
        await fed.create_work(fed.work(broken, stuck, deployment("stuck", namespace, 2)))
        assert f"cluster {broken} is not connected" in await _until(lambda: failed(broken, stuck))
        await fed.host.delete(WORK_GVK, stuck, namespace=execution_namespace(broken))
        with anyio.move_on_after(3):
            await eventually(lambda: fed.gone(WORK_GVK, stuck, execution_namespace(broken)))
        assert not await fed.gone(WORK_GVK, stuck, execution_namespace(broken)), (
            "an unreachable member blocks the Work's deletion"
        )
        await fed.host.delete(CLUSTER_GVK, broken)
        await _until(lambda: fed.gone(WORK_GVK, stuck, execution_namespace(broken)))
        await _until(lambda: fed.gone(CLUSTER_GVK, broken, None))


async def test_a_cluster_that_joins_later_gets_its_pending_works_applied(
    multicluster: Environment, namespace: str
) -> None:
    async with federation(multicluster, namespace) as fed:
        late = f"late-{namespace[-6:]}"
        await fed.host.create(
            {
                "apiVersion": "cluster.karmada.io/v1alpha1",
                "kind": "Cluster",
                "metadata": {"name": late},
                "spec": {"apiEndpoint": multicluster.members["member2"].url, "syncMode": "Push"},
            }
        )
        await _until(lambda: _exists(fed.host, NAMESPACE, execution_namespace(late)))
        name = f"{namespace}-late"
        await fed.create_work(fed.work(late, name, deployment("late", namespace, 2)))

        async def failed() -> str | None:
            condition = await fed.applied(late, name)
            return condition["message"] if condition and condition["status"] == "False" else None

        assert "not connected" in await _until(failed)
        # The member becomes reachable (here: its kubeconfig is now known, and the Cluster
        # changes, which has the provider look at it again); the provider engages it, the Cluster
        # turns Ready, and the waiting Work is applied without any change to it.
        fed.registry.provider.kubeconfigs[late] = multicluster.members["member2"].kubeconfig
        touched = await fed.host.get(CLUSTER_GVK, late)
        touched["metadata"].setdefault("labels", {})["reachable"] = "yes"
        await fed.host.update(touched)
        await _until(lambda: fed.member_object("member2", "late"))

        async def applied() -> bool:
            condition = await fed.applied(late, name)
            return bool(condition and condition["status"] == "True")

        await _until(applied)
        await fed.host.delete(WORK_GVK, name, namespace=execution_namespace(late))
        await _until(lambda: fed.gone(DEPLOYMENT, "late", namespace, "member2"))
        await fed.host.delete(CLUSTER_GVK, late)
        await _until(lambda: fed.gone(CLUSTER_GVK, late, None))


async def _exists(client: Client, gvk: GVK, name: str) -> bool:
    return not await gone(client, gvk, name)


# --- status: Work, binding, template -------------------------------------------------------------


async def test_member_status_flows_to_the_work_the_binding_and_the_template(
    multicluster: Environment, namespace: str
) -> None:
    async with federation(multicluster, namespace) as fed:
        template = await fed.host.create(deployment("app", namespace, replicas=4))
        binding_id = f"id-{namespace}"
        await fed.host.create(
            {
                "apiVersion": "work.karmada.io/v1alpha2",
                "kind": "ResourceBinding",
                "metadata": {
                    "name": "app-deployment",
                    "namespace": namespace,
                    "labels": {RESOURCE_BINDING_PERMANENT_ID_LABEL: binding_id},
                },
                "spec": {
                    "resource": {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "namespace": namespace,
                        "name": "app",
                        "uid": template["metadata"]["uid"],
                        "resourceVersion": template["metadata"]["resourceVersion"],
                    },
                    "replicas": 4,
                    "clusters": [
                        {"name": "member1", "replicas": 2},
                        {"name": "member2", "replicas": 2},
                    ],
                },
            }
        )
        work_name = f"{namespace}-app"

        def binding_work(cluster: str) -> Obj:
            manifest = deployment(
                "app", namespace, replicas=2, annotations={GENERATION_ANNOTATION: "1"}
            )
            return fed.work(
                cluster,
                work_name,
                manifest,
                labels={RESOURCE_BINDING_PERMANENT_ID_LABEL: binding_id},
                annotations={
                    RESOURCE_BINDING_NAMESPACE_ANNOTATION: namespace,
                    RESOURCE_BINDING_NAME_ANNOTATION: "app-deployment",
                },
            )

        async def binding_status() -> Obj:
            current = await fed.host.get(
                RESOURCE_BINDING_GVK, "app-deployment", namespace=namespace
            )
            status: Obj = current.get("status") or {}
            return status

        # One of two target clusters applied: not fully applied.
        await fed.create_work(binding_work("member1"))

        async def one_applied() -> Obj | None:
            status = await binding_status()
            items = status.get("aggregatedStatus") or []
            return status if [i.get("applied") for i in items] == [True] else None

        status = await _until(one_applied)
        assert status["aggregatedStatus"][0]["clusterName"] == "member1"
        assert not is_condition_true({"status": status}, FULLY_APPLIED_CONDITION)

        await fed.create_work(binding_work("member2"))

        async def fully_applied() -> Obj | None:
            status = await binding_status()
            return (
                status if is_condition_true({"status": status}, FULLY_APPLIED_CONDITION) else None
            )

        await _until(fully_applied)

        # The members' deployment controllers report: replicas ready everywhere.
        for cluster in MEMBERS:
            await _until(functools.partial(fed.member_object, cluster, "app"))
            await fed.member_status(
                cluster, "app", observedGeneration=1, replicas=2, updatedReplicas=2,
                readyReplicas=2, availableReplicas=2,
            )  # fmt: skip

        async def reflected() -> Obj | None:
            work = await fed.host.get(WORK_GVK, work_name, namespace=execution_namespace("member1"))
            entries = (work.get("status") or {}).get("manifestStatuses") or []
            ready = entries and (entries[0].get("status") or {}).get("readyReplicas") == 2
            return entries[0] if ready else None

        entry = await _until(reflected)
        assert entry["identifier"] == {
            "ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment",
            "namespace": namespace, "name": "app",
        }  # fmt: skip
        assert entry["health"] == "Healthy"
        assert entry["status"]["resourceTemplateGeneration"] == 1

        async def aggregated() -> list[Obj] | None:
            items: list[Obj] = (await binding_status()).get("aggregatedStatus") or []
            done = len(items) == 2 and all(
                (i.get("status") or {}).get("readyReplicas") == 2 for i in items
            )
            return items if done else None

        items = await _until(aggregated)
        assert [i["clusterName"] for i in items] == ["member1", "member2"]
        assert all(i["applied"] and i["health"] == "Healthy" for i in items)

        async def template_status(ready: int, observed: int) -> Obj | None:
            current = await fed.host.get(DEPLOYMENT, "app", namespace=namespace)
            status: Obj = current.get("status") or {}
            wanted = (status.get("readyReplicas"), status.get("observedGeneration"))
            return current if wanted == (ready, observed) else None

        current = await _until(lambda: template_status(4, 1))
        assert current["status"]["replicas"] == 4
        assert current["status"]["availableReplicas"] == 4

        # The template changes (generation 2); member1 loses a ready replica. The counts follow
        # at once, observedGeneration only once every member runs the new template generation.
        changed = await fed.host.patch(
            DEPLOYMENT, "app", {"spec": {"template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.26"}]}}}}, namespace=namespace,
        )  # fmt: skip
        assert changed["metadata"]["generation"] == 2
        resource_version = changed["metadata"]["resourceVersion"]
        await fed.host.patch(
            RESOURCE_BINDING_GVK,
            "app-deployment",
            {"spec": {"resource": {"resourceVersion": resource_version}}},
            namespace=namespace,
        )
        await fed.member_status("member1", "app", readyReplicas=1, availableReplicas=1)
        await _until(lambda: template_status(3, 1))

        def roll_out(manifest: Obj) -> None:
            manifest["metadata"]["annotations"][GENERATION_ANNOTATION] = "2"
            manifest["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"

        for cluster in MEMBERS:
            await fed.update_manifest(cluster, work_name, roll_out)

        async def rolled(cluster: str) -> Obj | None:
            current = await fed.member_object(cluster, "app")
            return current if current and current["metadata"]["generation"] == 2 else None

        for cluster in MEMBERS:
            await _until(functools.partial(rolled, cluster))
            await fed.member_status(
                cluster, "app", observedGeneration=2, replicas=2, updatedReplicas=2,
                readyReplicas=2, availableReplicas=2,
            )  # fmt: skip
        await _until(lambda: template_status(4, 2))
