"""Detector, scheduler and binding controller together on a real host: template → binding → Works.

Covered: a weighted Deployment scheduled 2:1 and its Works following scale, Duplicated, an
override for one cluster, an excluded cluster and the policy's deletion; policy precedence
(namespaced over cluster policies, priority, preemption, a policy's deletion handing templates to
the next one); a template waiting for its policy; bad input (interpreter and override failures,
no cluster fitting) as Events and conditions that spare everything else; a cluster-scoped template
with its ClusterResourceBinding, re-created when deleted and cleaned up with its Works.

No member cluster runs: Cluster objects are created directly and their status (Ready,
apiEnablements, resourceSummary) is written by the test, which is all these three controllers read.
Cluster names are unique per test and every policy restricts itself to them with clusterNames, so
Clusters that other tests left on the shared host never take part.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
import pytest_asyncio

from controllers import detector
from controllers.api import (
    CLUSTER_GVK,
    CLUSTER_PROPAGATION_POLICY_GVK,
    CLUSTER_RESOURCE_BINDING_GVK,
    OVERRIDE_POLICY_GVK,
    PROPAGATION_POLICY_GVK,
    RESOURCE_BINDING_GVK,
    WORK_GVK,
)
from controllers.binding import controller as binding_controller
from controllers.binding import work_name
from controllers.cluster import Members as MemberClusters
from controllers.context import Context
from controllers.interpreter import Interpreter
from controllers.scheduler import controller as scheduler_controller
from reconcile import (
    GVK,
    Client,
    ClusterConfig,
    Conflict,
    Manager,
    ManagerOptions,
    NotFound,
    is_being_deleted,
    is_condition_true,
)
from testenv import ControlPlane, consistently, eventually
from tests.builders import (
    Obj,
    cluster,
    delete_and_wait,
    deployment,
    get_or_none,
    gone,
    propagation_policy,
    ready_cluster_status,
    scaled,
    weighted,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

DEPLOYMENT = GVK("apps", "v1", "Deployment")
NAMESPACE = GVK("", "v1", "Namespace")
EVENT = GVK("", "v1", "Event")
CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
PP_ID = "propagationpolicy.karmada.io/permanent-id"
CPP_ID = "clusterpropagationpolicy.karmada.io/permanent-id"
RB_ID = "resourcebinding.karmada.io/permanent-id"
TIMEOUT = 30.0


@dataclass
class Members:
    """The two Clusters of one test and their execution namespaces."""

    one: str
    two: str

    @property
    def names(self) -> list[str]:
        return [self.one, self.two]


@pytest_asyncio.fixture(loop_scope="session")
async def members(karmada_client: Client) -> AsyncIterator[Members]:
    client = karmada_client
    suffix = secrets.token_hex(3)
    found = Members(f"m1-{suffix}", f"m2-{suffix}")
    for name in found.names:
        created = await client.create(cluster(name, labels={"test-member": name}))
        created["status"] = ready_cluster_status()
        await client.update_status(created)
        namespace = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": f"karmada-es-{name}"},
        }
        await client.create(namespace)
    try:
        yield found
    finally:
        for name in found.names:
            await _remove_works(client, f"karmada-es-{name}")
            with contextlib.suppress(NotFound):
                await client.delete(CLUSTER_GVK, name)
            with contextlib.suppress(NotFound):
                await client.delete(NAMESPACE, f"karmada-es-{name}")


async def _remove_works(client: Client, namespace: str) -> None:
    """Delete the Works left in an execution namespace, playing the execution controller (which
    would hold them until their member objects are gone): execution controllers of later tests
    must not chase clusters that no longer exist."""
    for work in await client.list_all(WORK_GVK, namespace=namespace):
        with contextlib.suppress(NotFound):
            if work["metadata"].get("finalizers"):
                await client.patch(work, {"metadata": {"finalizers": None}})
            await client.delete(work)


@contextlib.asynccontextmanager
async def running(
    host: ControlPlane, interpreter: Interpreter | None = None, *, scheduler: bool = True
) -> AsyncIterator[Manager]:
    """A manager running the detector, the scheduler (unless left out) and the binding
    controller."""
    config = await ClusterConfig.from_kubeconfig(
        host.kubeconfig, temp_dir=host.directory / "client"
    )
    manager = Manager(config, options=ManagerOptions(metrics_bind_address="0"))
    context = Context(manager, MemberClusters.of(manager), interpreter or Interpreter())
    detector.setup(context)
    if scheduler:
        scheduler_controller.setup(context)
    binding_controller.setup(context)
    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        try:
            yield manager
        finally:
            manager.stop()


def nginx_selector(name: str = "nginx") -> list[Obj]:
    return [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}]


async def change(
    client: Client, gvk: GVK, name: str, namespace: str | None, edit: Callable[[Obj], None]
) -> None:
    """Read, edit and update an object, again on a conflict (the controllers write it too)."""
    for _ in range(10):
        obj = await client.get(gvk, name, namespace=namespace)
        edit(obj)
        with contextlib.suppress(Conflict):
            await client.update(obj)
            return
    raise AssertionError(f"could not update {gvk.kind} {name}")


async def work_replicas(client: Client, namespace: str, cluster: str) -> int | None:
    """The replicas in the manifest of the nginx Work for ``cluster`` (None: no live Work)."""
    name = work_name("Deployment", "nginx", namespace)
    work = await get_or_none(client, WORK_GVK, name, f"karmada-es-{cluster}")
    if work is None or is_being_deleted(work):
        return None
    manifest = work["spec"]["workload"]["manifests"][0]
    return int(manifest["spec"]["replicas"])


def until(probe: Callable[[], Awaitable[Any]]) -> Awaitable[Any]:
    return eventually(probe, timeout=TIMEOUT, interval=0.2)


async def test_a_weighted_deployment_becomes_scheduled_works_that_follow_every_change(
    host: ControlPlane, client: Client, namespace: str, members: Members
) -> None:
    assert work_name("Deployment", "nginx", "default") == "nginx-687f7fb96f"
    policy = propagation_policy(
        "nginx-pp", namespace, nginx_selector(), weighted(members.names, (2, 1))
    )
    async with running(host):
        await client.create(policy)
        await client.create(deployment("nginx", namespace, 3))

        async def bound() -> Obj | None:
            binding = await get_or_none(client, RESOURCE_BINDING_GVK, "nginx-deployment", namespace)
            if binding is None or binding["spec"].get("replicas") != 3:
                return None
            return binding

        binding = await until(bound)
        pp = await client.get(PROPAGATION_POLICY_GVK, "nginx-pp", namespace=namespace)
        pp_id = pp["metadata"]["labels"][PP_ID]
        assert "karmada.io/propagation-policy-controller" in pp["metadata"]["finalizers"]
        template = await client.get(DEPLOYMENT, "nginx", namespace=namespace)
        assert template["metadata"]["labels"][PP_ID] == pp_id
        assert (
            template["metadata"]["annotations"]["propagationpolicy.karmada.io/name"] == "nginx-pp"
        )
        assert (
            template["metadata"]["annotations"]["propagationpolicy.karmada.io/namespace"]
            == namespace
        )
        assert binding["metadata"]["labels"][PP_ID] == pp_id
        assert binding["metadata"]["labels"][RB_ID]
        owner = binding["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "Deployment",
            "nginx",
            template["metadata"]["uid"],
        )
        assert binding["spec"]["resource"]["uid"] == template["metadata"]["uid"]
        assert binding["spec"]["placement"] == pp["spec"]["placement"]

        async def scheduled() -> Obj | None:
            current = await get_or_none(client, RESOURCE_BINDING_GVK, "nginx-deployment", namespace)
            if current is None or not is_condition_true(current, "Scheduled"):
                return None
            observed = current["status"].get("schedulerObservedGeneration")
            return current if observed == current["metadata"]["generation"] else None

        binding = await until(scheduled)
        assert binding["spec"]["clusters"] == [
            {"name": members.one, "replicas": 2},
            {"name": members.two, "replicas": 1},
        ]
        assert binding["status"]["lastScheduledTime"]
        assert "policy.karmada.io/applied-placement" in binding["metadata"]["annotations"]

        async def works(expected: tuple[int | None, int | None]) -> bool:
            found = (
                await work_replicas(client, namespace, members.one),
                await work_replicas(client, namespace, members.two),
            )
            return found == expected

        await until(lambda: works((2, 1)))
        work = await client.get(
            WORK_GVK,
            work_name("Deployment", "nginx", namespace),
            namespace=f"karmada-es-{members.one}",
        )
        assert work["metadata"]["labels"][RB_ID] == binding["metadata"]["labels"][RB_ID]
        assert "karmada.io/execution-controller" in work["metadata"]["finalizers"]
        manifest = work["spec"]["workload"]["manifests"][0]
        assert manifest["metadata"]["labels"]["karmada.io/managed"] == "true"
        assert "status" not in manifest
        assert "resourceVersion" not in manifest["metadata"]

        def scale(replicas: int) -> Callable[[Obj], None]:
            def edit(obj: Obj) -> None:
                obj["spec"]["replicas"] = replicas

            return edit

        await change(client, DEPLOYMENT, "nginx", namespace, scale(9))
        await until(lambda: works((6, 3)))

        def duplicated(obj: Obj) -> None:
            obj["spec"]["placement"]["replicaScheduling"] = {"replicaSchedulingType": "Duplicated"}

        await change(client, PROPAGATION_POLICY_GVK, "nginx-pp", namespace, duplicated)
        await until(lambda: works((9, 9)))
        await change(client, DEPLOYMENT, "nginx", namespace, scale(3))
        await until(lambda: works((3, 3)))

        override = {
            "apiVersion": OVERRIDE_POLICY_GVK.api_version,
            "kind": OVERRIDE_POLICY_GVK.kind,
            "metadata": {"name": "label-member-two", "namespace": namespace},
            "spec": {
                "resourceSelectors": nginx_selector(),
                "overrideRules": [
                    {
                        "targetCluster": {"clusterNames": [members.two]},
                        "overriders": {
                            "labelsOverrider": [{"operator": "add", "value": {"tier": "two"}}]
                        },
                    }
                ],
            },
        }
        await client.create(override)

        async def labels(cluster: str) -> Obj:
            name = work_name("Deployment", "nginx", namespace)
            work = await client.get(WORK_GVK, name, namespace=f"karmada-es-{cluster}")
            labels: Obj = work["spec"]["workload"]["manifests"][0]["metadata"]["labels"]
            return {"work": work, "labels": labels}

        async def overridden() -> bool:
            return bool((await labels(members.two))["labels"].get("tier") == "two")

        await until(overridden)
        two = await labels(members.two)
        assert "policy.karmada.io/applied-overrides" in two["work"]["metadata"]["annotations"]
        one = await labels(members.one)
        assert "tier" not in one["labels"]
        assert "policy.karmada.io/applied-overrides" not in one["work"]["metadata"]["annotations"]

        def exclude_two(obj: Obj) -> None:
            obj["spec"]["placement"]["clusterAffinity"]["exclude"] = [members.two]

        await change(client, PROPAGATION_POLICY_GVK, "nginx-pp", namespace, exclude_two)
        await until(lambda: works((3, None)))

        await client.delete(PROPAGATION_POLICY_GVK, "nginx-pp", namespace=namespace)

        async def released() -> bool:
            current = await client.get(DEPLOYMENT, "nginx", namespace=namespace)
            gone = await get_or_none(client, PROPAGATION_POLICY_GVK, "nginx-pp", namespace)
            return gone is None and PP_ID not in current["metadata"].get("labels", {})

        await until(released)
        template = await client.get(DEPLOYMENT, "nginx", namespace=namespace)
        annotations = template["metadata"].get("annotations") or {}
        assert "propagationpolicy.karmada.io/name" not in annotations
        binding = await client.get(RESOURCE_BINDING_GVK, "nginx-deployment", namespace=namespace)
        assert PP_ID not in binding["metadata"]["labels"], "the binding keeps no claim either"
        assert await work_replicas(client, namespace, members.one) == 3, "the Work stays"


async def claimed_by(client: Client, namespace: str, name: str) -> str | None:
    template = await client.get(DEPLOYMENT, name, namespace=namespace)
    annotations = template["metadata"].get("annotations") or {}
    if "propagationpolicy.karmada.io/name" in annotations:
        return str(annotations["propagationpolicy.karmada.io/name"])
    if "clusterpropagationpolicy.karmada.io/name" in annotations:
        return "cpp:" + str(annotations["clusterpropagationpolicy.karmada.io/name"])
    return None


async def test_policy_precedence_namespaced_first_then_priority_then_preemption(
    host: ControlPlane, client: Client, namespace: str, members: Members
) -> None:
    to_one = {"clusterAffinity": {"clusterNames": [members.one]}}
    to_two = {"clusterAffinity": {"clusterNames": [members.two]}}
    cpp_name = f"cpp-{namespace}"[:60]
    deployments_here = [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": namespace}]
    cpp = propagation_policy(cpp_name, "", deployments_here, to_one, priority=100)
    async with running(host):
        try:
            await client.create(cpp)
            kind_only = [{"apiVersion": "apps/v1", "kind": "Deployment"}]
            await client.create(propagation_policy("any-deployment", namespace, kind_only, to_two))
            await client.create(
                propagation_policy("low", namespace, nginx_selector("api"), to_one, priority=1)
            )
            await client.create(
                propagation_policy("high", namespace, nginx_selector("api"), to_two, priority=5)
            )
            # Templates created only once the detector knows every policy (it gave each an id):
            # otherwise the first policy it happens to see could claim them.
            await until(lambda: _identified(client, namespace, ["any-deployment", "low", "high"]))
            await until(lambda: _identified(client, "", [cpp_name]))
            for name in ("web", "api"):
                await client.create(deployment(name, namespace, 1))

            async def claims() -> dict[str, str | None]:
                return {n: await claimed_by(client, namespace, n) for n in ("web", "api")}

            await until(lambda: _equal(claims, {"web": "any-deployment", "api": "high"}))
            web = await until(
                lambda: get_or_none(client, RESOURCE_BINDING_GVK, "web-deployment", namespace)
            )
            assert CPP_ID not in web["metadata"]["labels"], "a namespaced policy beats any CPP"

            # Without preemption a higher-priority newcomer does not take a claimed template...
            await client.create(
                propagation_policy("newcomer", namespace, nginx_selector("api"), to_one, priority=9)
            )
            # ...with preemption it does.
            await client.create(
                propagation_policy(
                    "grabber",
                    namespace,
                    nginx_selector("api"),
                    to_one,
                    priority=7,
                    preemption="Always",
                )
            )
            await until(lambda: _equal(claims, {"web": "any-deployment", "api": "grabber"}))

            # Only the CPP selects this one once the namespaced policy is gone.
            await client.delete(PROPAGATION_POLICY_GVK, "any-deployment", namespace=namespace)
            await until(lambda: _equal(claims, {"web": f"cpp:{cpp_name}", "api": "grabber"}))

            async def cpp_bound() -> bool:
                binding = await get_or_none(
                    client, RESOURCE_BINDING_GVK, "web-deployment", namespace
                )
                labels = (binding or {}).get("metadata", {}).get("labels", {})
                return CPP_ID in labels and PP_ID not in labels

            await until(cpp_bound)
        finally:
            await _delete_cluster_policy(client, cpp_name)


async def _delete_cluster_policy(client: Client, name: str) -> None:
    """Delete a test's ClusterPropagationPolicy (cluster-scoped: other tests would see it) and
    let the running detector release it. A policy left behind fails the test loudly (after its
    own failure, if any, which pytest shows first): it would claim later tests' templates."""
    await delete_and_wait(client, CLUSTER_PROPAGATION_POLICY_GVK, name, timeout=TIMEOUT)


async def _identified(client: Client, namespace: str, names: list[str]) -> bool:
    gvk = PROPAGATION_POLICY_GVK if namespace else CLUSTER_PROPAGATION_POLICY_GVK
    label = PP_ID if namespace else CPP_ID
    for name in names:
        policy = await client.get(gvk, name, namespace=namespace or None)
        if not policy["metadata"].get("labels", {}).get(label):
            return False
    return True


async def cached(manager: Manager, gvk: GVK, name: str, namespace: str | None = None) -> bool:
    """Whether the manager's cache (what the controllers read) holds the object."""
    try:
        await manager.client.get(gvk, name, namespace=namespace)
    except NotFound:
        return False
    return True


async def _equal(probe: Callable[[], Awaitable[Any]], expected: Any) -> bool:
    return bool(await probe() == expected)


async def test_a_template_waits_for_a_policy_and_is_claimed_when_one_appears(
    host: ControlPlane, client: Client, namespace: str, members: Members
) -> None:
    placement = {"clusterAffinity": {"clusterNames": [members.one]}}
    async with running(host) as manager:
        await client.create(deployment("nginx", namespace, 2))
        # The detector has the template (its cache does) and no policy: it stays unclaimed. Its
        # workers leave no mark on a template they find no policy for, so this holds over a
        # window rather than at the one instant after the cache had it.
        await until(lambda: cached(manager, DEPLOYMENT, "nginx", namespace))
        await consistently(lambda: _unbound_and_unclaimed(client, namespace), duration=scaled(2))
        await client.create(propagation_policy("later", namespace, nginx_selector(), placement))
        await until(lambda: _equal(lambda: claimed_by(client, namespace, "nginx"), "later"))
        await until(lambda: work_replicas(client, namespace, members.one))
        assert await work_replicas(client, namespace, members.one) == 2
        assert await get_or_none(client, RESOURCE_BINDING_GVK, "nginx-deployment", namespace)


async def _unbound_and_unclaimed(client: Client, namespace: str) -> bool:
    binding = await get_or_none(client, RESOURCE_BINDING_GVK, "nginx-deployment", namespace)
    return binding is None and await claimed_by(client, namespace, "nginx") is None


def _failing_replicas(kind: str) -> Obj:
    return {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": f"broken-{kind.lower()}"},
        "spec": {
            "target": {"apiVersion": "apps/v1", "kind": kind},
            "customizations": {
                "replicaResource": {
                    "luaScript": 'function GetReplicas(obj)\n  error("no replicas today")\nend'
                }
            },
        },
    }


async def events(client: Client, namespace: str, name: str, reason: str) -> list[Obj]:
    found = await client.list(EVENT, namespace=namespace)
    return [
        e
        for e in found["items"]
        if e.get("reason") == reason and e.get("involvedObject", {}).get("name") == name
    ]


async def test_bad_input_becomes_events_and_conditions_and_spares_the_rest(
    host: ControlPlane, client: Client, namespace: str, members: Members
) -> None:
    interpreter = Interpreter()
    await interpreter.apply_customization(_failing_replicas("StatefulSet"))
    placement = {
        "clusterAffinity": {"clusterNames": members.names},
        "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
    }
    selectors = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
    ]
    broken_override = {
        "apiVersion": OVERRIDE_POLICY_GVK.api_version,
        "kind": OVERRIDE_POLICY_GVK.kind,
        "metadata": {"name": "broken", "namespace": namespace},
        "spec": {
            "resourceSelectors": nginx_selector(),
            "overrideRules": [
                {
                    "targetCluster": {"clusterNames": [members.two]},
                    "overriders": {
                        "plaintext": [
                            {"path": "/spec/no/such/field", "operator": "replace", "value": 1}
                        ]
                    },
                }
            ],
        },
    }
    async with running(host, interpreter) as manager:
        await client.create(broken_override)
        # The binding controller must know the override before it first builds the Works.
        await until(lambda: cached(manager, OVERRIDE_POLICY_GVK, "broken", namespace))
        await client.create(propagation_policy("both", namespace, selectors, placement))
        statefulset = deployment("db", namespace, 1) | {"kind": "StatefulSet"}
        statefulset["spec"]["serviceName"] = "db"
        await client.create(statefulset)
        await client.create(deployment("nginx", namespace, 2))

        # The interpreter fails for the StatefulSet: an Event on it, and no binding...
        await until(lambda: events(client, namespace, "db", "ApplyPolicyFailed"))
        assert await get_or_none(client, RESOURCE_BINDING_GVK, "db-statefulset", namespace) is None
        # ...while the Deployment is propagated: member one gets its Work, member two's override
        # fails, which is an Event and a condition on the binding.
        await until(lambda: work_replicas(client, namespace, members.one))

        async def not_synced() -> Obj | None:
            binding = await get_or_none(client, RESOURCE_BINDING_GVK, "nginx-deployment", namespace)
            for condition in (binding or {}).get("status", {}).get("conditions", []):
                if condition["type"] == "WorksSynced" and condition["status"] == "False":
                    return dict(condition)
            return None

        condition = await until(not_synced)
        assert condition["reason"] == "SyncWorkFailed"
        assert members.two in condition["message"]
        assert "broken" in condition["message"]
        assert await until(lambda: events(client, namespace, "nginx-deployment", "SyncWorkFailed"))
        assert await work_replicas(client, namespace, members.two) is None

        await client.delete(OVERRIDE_POLICY_GVK, "broken", namespace=namespace)
        await until(lambda: work_replicas(client, namespace, members.two))

        # No member serves Secrets (their apiEnablements say so): NoClusterFit, with reasons.
        secrets_placement = {"clusterAffinity": {"clusterNames": members.names}}
        secret_selector = [{"apiVersion": "v1", "kind": "Secret", "name": "creds"}]
        await client.create(
            propagation_policy("secrets", namespace, secret_selector, secrets_placement)
        )
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}}
        await client.create(secret | {"metadata": {"name": "creds", "namespace": namespace}})

        async def unschedulable() -> Obj | None:
            binding = await get_or_none(client, RESOURCE_BINDING_GVK, "creds-secret", namespace)
            for condition in (binding or {}).get("status", {}).get("conditions", []):
                if condition["type"] == "Scheduled" and condition["status"] == "False":
                    return dict(condition)
            return None

        refused = await until(unschedulable)
        assert refused["reason"] == "NoClusterFit"
        assert f"{members.one}: cluster(s) did not have the API resource" in refused["message"]
        assert await until(
            lambda: events(client, namespace, "creds-secret", "ScheduleBindingFailed")
        )

        async def synced() -> bool:
            binding = await client.get(
                RESOURCE_BINDING_GVK, "nginx-deployment", namespace=namespace
            )
            return is_condition_true(binding, "WorksSynced")

        await until(synced)


async def test_a_cluster_scoped_template_gets_a_cluster_resource_binding_and_works(
    host: ControlPlane, client: Client, members: Members
) -> None:
    role_name = f"reader-{members.one}"
    policy_name = f"roles-{members.one}"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": role_name},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    selectors = [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": role_name}
    ]
    placement = {"clusterAffinity": {"clusterNames": members.names}}
    binding_name = f"{role_name}-clusterrole"
    name = work_name("ClusterRole", role_name)
    async with running(host):
        try:
            await client.create(propagation_policy(policy_name, "", selectors, placement))
            await client.create(role)

            async def scheduled() -> Obj | None:
                crb = await get_or_none(client, CLUSTER_RESOURCE_BINDING_GVK, binding_name)
                return crb if crb and is_condition_true(crb, "Scheduled") else None

            crb = await until(scheduled)
            assert crb["metadata"]["labels"][CPP_ID]
            assert "karmada.io/cluster-resource-binding-controller" in crb["metadata"]["finalizers"]
            assert [c["name"] for c in crb["spec"]["clusters"]] == members.names
            assert "replicas" not in crb["spec"]

            async def works() -> list[Obj] | None:
                found = [
                    await get_or_none(client, WORK_GVK, name, f"karmada-es-{m}")
                    for m in members.names
                ]
                present = [w for w in found if w is not None]
                return present if len(present) == len(members.names) else None

            found = await until(works)
            manifest = found[0]["spec"]["workload"]["manifests"][0]
            assert (manifest["kind"], manifest["metadata"]["name"]) == ("ClusterRole", role_name)
            annotations = found[0]["metadata"]["annotations"]
            assert annotations["clusterresourcebinding.karmada.io/name"] == binding_name

            # A binding deleted while its template is claimed comes back...
            first_uid = crb["metadata"]["uid"]
            await client.delete(CLUSTER_RESOURCE_BINDING_GVK, binding_name)

            async def recreated() -> bool:
                again = await get_or_none(client, CLUSTER_RESOURCE_BINDING_GVK, binding_name)
                return again is not None and again["metadata"]["uid"] != first_uid

            await until(recreated)
            # ...but with the template gone (testenv runs no garbage collector: the test deletes
            # the binding as the collector would), its Works are deleted, then the binding goes.
            await client.delete(CLUSTER_ROLE, role_name)
            await client.delete(CLUSTER_RESOURCE_BINDING_GVK, binding_name)

            async def works_deleted() -> bool:
                current = [
                    await get_or_none(client, WORK_GVK, name, f"karmada-es-{m}")
                    for m in members.names
                ]
                return all(w is None or is_being_deleted(w) for w in current)

            await until(works_deleted)
            await until(lambda: gone(client, CLUSTER_RESOURCE_BINDING_GVK, binding_name))
        finally:
            with contextlib.suppress(NotFound):
                await client.delete(CLUSTER_ROLE, role_name)
            await _delete_cluster_policy(client, policy_name)


async def test_no_work_is_written_for_a_cluster_being_deleted(
    host: ControlPlane, client: Client, namespace: str, members: Members
) -> None:
    # The cluster controller deletes a deleted Cluster's Works before its finalizer goes; a
    # binding controller that wrote them again kept `reconcile unjoin` waiting for ever. The
    # test's finalizer holds the Cluster in its deletion as a slow cluster controller would, and
    # the test plays the scheduler: until it reschedules (NoClusterFit here), the binding is still
    # Scheduled to the cluster, which is when the binding controller must not write to it.
    hold = "tests.reconcile.io/hold"
    await change(
        client, CLUSTER_GVK, members.one, None, lambda c: c["metadata"].update(finalizers=[hold])
    )
    placement = {"clusterAffinity": {"clusterNames": [members.one]}}
    policy = propagation_policy("nginx-pp", namespace, nginx_selector(), placement)
    execution_namespace = f"karmada-es-{members.one}"
    name = work_name("Deployment", "nginx", namespace)

    async def no_work() -> bool:
        return await get_or_none(client, WORK_GVK, name, execution_namespace) is None

    try:
        async with running(host, scheduler=False):
            await client.create(policy)
            await client.create(deployment("nginx", namespace, 1))
            await until(
                lambda: get_or_none(client, RESOURCE_BINDING_GVK, "nginx-deployment", namespace)
            )
            await change(
                client,
                RESOURCE_BINDING_GVK,
                "nginx-deployment",
                namespace,
                lambda b: b["spec"].update(clusters=[{"name": members.one, "replicas": 1}]),
            )
            binding = await client.get(
                RESOURCE_BINDING_GVK, "nginx-deployment", namespace=namespace
            )
            binding["status"] = {
                "schedulerObservedGeneration": binding["metadata"]["generation"],
                "conditions": [
                    {
                        "type": "Scheduled",
                        "status": "True",
                        "reason": "Success",
                        "message": "played by the test",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ],
            }
            await client.update_status(binding)
            await until(lambda: work_replicas(client, namespace, members.one))
            await client.delete(CLUSTER_GVK, members.one)
            await _remove_works(client, execution_namespace)
            await until(no_work)
            await consistently(no_work, duration=scaled(3))
    finally:
        await change(
            client, CLUSTER_GVK, members.one, None, lambda c: c["metadata"].update(finalizers=[])
        )
