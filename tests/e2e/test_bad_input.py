"""End to end: bad input is reported where it was made, and everything else keeps propagating.

An invalid policy gets a Warning Event naming the problem; a manifest a member refuses leaves that
member's Work Applied=False with the member's words (and an Event), as does a kind the member does
not serve; a Cluster whose Secret is missing is Ready=False saying so (and gets an Event) until the
Secret exists; Clusters with an http endpoint, a Secret in another namespace or a token that is not
UTF-8 are refused with their reason, and the http one never receives a connection. Each time, a
good Deployment and policy created alongside reaches both members.
"""

from __future__ import annotations

import base64
import contextlib
from typing import Any

import pytest

from controllers.api import (
    CLUSTER_GVK,
    RESOURCE_BINDING_GVK,
    WORK_APPLIED_CONDITION,
    WORK_GVK,
)
from controllers.binding import work_name
from controllers.cluster.binding import owner_reference
from reconcile import GVK, Condition, NotFound, get_condition
from testenv import Environment, consistently, eventually
from tests.builders import get_or_none, scaled
from tests.e2e.stack import (
    FAST_HEALTH,
    OVERRIDE,
    Stack,
    cluster_ready,
    new_deployment,
    new_policy,
    running,
    tcp_listener,
    warning_event,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

SECRET = GVK("", "v1", "Secret")


async def propagates(stack: Stack, name: str) -> None:
    """A good Deployment and its policy reach both members (2:1)."""
    await stack.host.create(new_deployment(name, stack.namespace, 3))
    await stack.host.create(new_policy(name, stack.namespace, name))
    await stack.wait_replicas(name, {"member1": 2, "member2": 1})


async def test_an_invalid_policy_is_reported_and_selects_nothing(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        await _an_invalid_policy_is_reported_and_selects_nothing(stack)


async def _an_invalid_policy_is_reported_and_selects_nothing(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(new_deployment("stray", ns, 3))
    broken = new_policy("broken", ns, "stray")
    # Read leniently, "NotIn a value no label can have" would select every Deployment here. The
    # schema lets it through; Kubernetes (and Karmada's webhook) would not.
    impossible = {"key": "app", "operator": "NotIn", "values": ["no such value!"]}
    broken["spec"]["resourceSelectors"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "labelSelector": {"matchExpressions": [impossible]},
        }
    ]
    await stack.host.create(broken)

    event = await warning_event(stack, "broken", "InvalidPolicy", ns)
    assert (
        "spec.resourceSelectors[0].labelSelector.matchExpressions[0].values[0]"
        in (event["message"])
    )
    assert "'no such value!'" in event["message"]
    assert event["involvedObject"]["kind"] == "PropagationPolicy"

    await propagates(stack, "web")
    # The detector's workers run concurrently, so "web" propagated does not prove "stray" was
    # looked at, and an unclaimed template shows no mark of it: hold "nothing selected it" over
    # a window longer than propagating "web" took.

    async def unselected() -> bool:
        binding = await get_or_none(stack.host, RESOURCE_BINDING_GVK, "stray-deployment", ns)
        return binding is None and await stack.replicas("stray") == {
            "member1": None,
            "member2": None,
        }

    await consistently(unselected, duration=scaled(3.0), interval=0.3)


async def test_a_manifest_a_member_refuses_is_reported_on_its_work(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        await _a_manifest_a_member_refuses_is_reported_on_its_work(stack)


async def _a_manifest_a_member_refuses_is_reported_on_its_work(stack: Stack) -> None:
    ns = stack.namespace
    # On member2 only, the image becomes empty: its apiserver answers 422 Invalid.
    await stack.host.create(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "OverridePolicy",
            "metadata": {"name": "no-image", "namespace": ns},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "refused"}
                ],
                "overrideRules": [
                    {
                        "targetCluster": {"clusterNames": ["member2"]},
                        "overriders": {
                            "plaintext": [
                                {
                                    "path": "/spec/template/spec/containers/0/image",
                                    "operator": "replace",
                                    "value": "",
                                }
                            ]
                        },
                    }
                ],
            },
        }
    )
    await stack.host.create(new_deployment("refused", ns, 3))
    await stack.host.create(new_policy("refused", ns, "refused"))

    condition = await _applied(stack, "member2", "refused", "False")
    assert condition["reason"] == "AppliedFailed"
    assert "spec.template.spec.containers[0].image: Required value" in condition["message"]
    name = work_name("Deployment", "refused", ns)
    event = await warning_event(stack, name, "SyncFailed", "karmada-es-member2")
    assert "member2" in event["message"]
    assert "Required value" in event["message"]

    # member1 is not affected by member2's refusal, nor are other templates.
    await _applied(stack, "member1", "refused", "True")
    assert (await stack.replicas("refused"))["member2"] is None
    member1 = await stack.member_deployment("member1", "refused")
    assert member1 is not None
    assert member1["spec"]["replicas"] == 2
    await propagates(stack, "web")

    # Fixing the input fixes the Work.
    await stack.host.delete(OVERRIDE, "no-image", namespace=ns)
    await stack.wait_replicas("refused", {"member1": 2, "member2": 1})
    await _applied(stack, "member2", "refused", "True")


async def test_a_kind_the_member_does_not_serve_is_reported_on_its_work(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        name = f"{namespace}-widget"
        try:
            await _a_kind_the_member_does_not_serve_is_reported_on_its_work(stack, name)
        finally:
            await _delete_and_wait(stack, WORK_GVK, name, "karmada-es-member1")


async def _a_kind_the_member_does_not_serve_is_reported_on_its_work(
    stack: Stack, name: str
) -> None:
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": stack.namespace},
    }
    work = {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": name, "namespace": "karmada-es-member1"},
        "spec": {"workload": {"manifests": [widget]}},
    }
    await _create_work(stack, work)

    async def refused() -> Condition | None:
        current = await stack.host.get(WORK_GVK, name, namespace="karmada-es-member1")
        condition = get_condition(current, WORK_APPLIED_CONDITION)
        # Skip "cluster member1 is not connected/ready": a manager that is still starting.
        if not condition or not condition["message"].startswith("Failed to apply"):
            return None
        return condition

    condition = await eventually(refused, timeout=60, interval=0.3)
    assert condition["status"] == "False"
    assert "no resource is served for example.com/v1, Kind=Widget" in condition["message"]
    await propagates(stack, "web")


async def _create_work(stack: Stack, work: dict[str, Any]) -> None:
    # A fresh host may not have the execution namespace yet: the cluster controller makes it.
    async def created() -> bool:
        try:
            await stack.host.create(work)
        except NotFound:
            return False
        return True

    await eventually(created, timeout=60, interval=0.3)


async def _delete_and_wait(stack: Stack, gvk: GVK, name: str, namespace: str | None = None) -> None:
    """Delete an object and wait until its finalizers (ours, while running) let it go."""
    with contextlib.suppress(NotFound):
        await stack.host.delete(gvk, name, namespace=namespace)

    async def gone() -> bool:
        try:
            await stack.host.get(gvk, name, namespace=namespace)
        except NotFound:
            return True
        return False

    await eventually(gone, timeout=60, interval=0.3)


async def _applied(stack: Stack, cluster: str, template: str, status: str) -> Condition:
    name = work_name("Deployment", template, stack.namespace)

    async def matches() -> Condition | None:
        try:
            work = await stack.host.get(WORK_GVK, name, namespace=f"karmada-es-{cluster}")
        except NotFound:
            return None
        condition = get_condition(work, WORK_APPLIED_CONDITION)
        return condition if condition and condition.get("status") == status else None

    return await eventually(matches, timeout=60, interval=0.3)


async def test_a_cluster_without_its_secret_is_not_ready_and_says_why(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace, health=FAST_HEALTH) as stack:
        ghost = f"ghost-{namespace[-6:]}"
        try:
            await _a_cluster_without_its_secret_is_not_ready_and_says_why(stack, ghost)
        finally:
            await _remove_cluster(stack, ghost)


async def _a_cluster_without_its_secret_is_not_ready_and_says_why(stack: Stack, ghost: str) -> None:
    # Reachable, were its Secret there: the same endpoint and credentials as member1.
    member1 = await stack.host.get(CLUSTER_GVK, "member1")
    reference = {"namespace": "karmada-cluster", "name": ghost}
    await stack.host.create(
        {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": ghost},
            "spec": {
                "apiEndpoint": member1["spec"]["apiEndpoint"],
                "secretRef": reference,
                "syncMode": "Push",
            },
        }
    )

    not_ready = await cluster_ready(stack, ghost, "False")
    assert not_ready["reason"] == "SecretNotFound"
    assert f"Secret karmada-cluster/{ghost} not found" in not_ready["message"]
    event = await warning_event(stack, ghost, "MemberConfigInvalid", "default")
    assert f"Secret karmada-cluster/{ghost} not found" in event["message"]
    assert (await cluster_ready(stack, "member1", "True"))["reason"] == "ClusterReady"
    await propagates(stack, "web")

    # The Secret appears, bound to the Cluster as join binds it: it connects and turns Ready.
    source = member1["spec"]["secretRef"]
    secret = await stack.host.get(SECRET, source["name"], namespace=source["namespace"])
    uid = (await stack.host.get(CLUSTER_GVK, ghost))["metadata"]["uid"]
    await stack.host.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {**reference, "ownerReferences": [owner_reference(ghost, uid)]},
            "type": "Opaque",
            "data": secret["data"],
        }
    )
    assert (await cluster_ready(stack, ghost, "True"))["reason"] == "ClusterReady"


async def test_refused_member_configurations_say_why_and_leave_the_others_working(
    joined: Environment, namespace: str
) -> None:
    suffix = namespace[-6:]
    names = {kind: f"{kind}-{suffix}" for kind in ("plain", "foreign", "binary")}
    async with (
        running(joined, namespace, health=FAST_HEALTH) as stack,
        tcp_listener() as (port, heard),
    ):
        try:
            await _refused_member_configurations(stack, names, port)
            assert heard == [], "nothing may connect to the http endpoint"
        finally:
            for name in names.values():
                await _remove_cluster(stack, name)
            with contextlib.suppress(NotFound):
                await stack.host.delete(SECRET, names["foreign"], namespace=namespace)


async def _refused_member_configurations(stack: Stack, names: dict[str, str], port: int) -> None:
    member1 = await stack.host.get(CLUSTER_GVK, "member1")
    source = member1["spec"]["secretRef"]
    usable = await stack.host.get(SECRET, source["name"], namespace=source["namespace"])
    secrets = {
        # A real token: sent over http it would let the listener act as member1's controller.
        names["plain"]: ("karmada-cluster", usable["data"]),
        names["foreign"]: (stack.namespace, usable["data"]),
        names["binary"]: ("karmada-cluster", {"token": base64.b64encode(b"\xff\xfe").decode()}),
    }
    for name, (where, data) in secrets.items():
        metadata = {"name": name, "namespace": where}
        await stack.host.create(
            {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": data}
        )
    endpoints = {
        names["plain"]: f"http://127.0.0.1:{port}",
        names["foreign"]: member1["spec"]["apiEndpoint"],
        names["binary"]: member1["spec"]["apiEndpoint"],
    }
    for name, endpoint in endpoints.items():
        reference = {"namespace": secrets[name][0], "name": name}
        spec = {"apiEndpoint": endpoint, "secretRef": reference, "syncMode": "Push"}
        await stack.host.create(
            {
                "apiVersion": CLUSTER_GVK.api_version,
                "kind": "Cluster",
                "metadata": {"name": name},
                "spec": spec,
            }
        )
    # Bound as join binds them: the provider uses a Secret's token only for its own Cluster.
    uid = (await stack.host.get(CLUSTER_GVK, names["binary"]))["metadata"]["uid"]
    owners = {"metadata": {"ownerReferences": [owner_reference(names["binary"], uid)]}}
    await stack.host.patch(SECRET, names["binary"], owners, namespace="karmada-cluster")
    expected = {
        names["plain"]: ("InsecureEndpoint", "is plain HTTP"),
        names["foreign"]: ("SecretRefNotAllowed", "read only from namespace karmada-cluster"),
        names["binary"]: ("InvalidSecret", "data.token is not UTF-8 text"),
    }
    for name, (reason, words) in expected.items():
        condition = await cluster_ready(stack, name, "False")
        assert condition["reason"] == reason
        assert words in condition["message"]
        assert (
            words in (await warning_event(stack, name, "MemberConfigInvalid", "default"))["message"]
        )
    await propagates(stack, "web")


async def _remove_cluster(stack: Stack, name: str) -> None:
    """Delete the Cluster (the running cluster controller releases it) and its Secret."""
    with contextlib.suppress(NotFound):
        await stack.host.delete(SECRET, name, namespace="karmada-cluster")
    await _delete_and_wait(stack, CLUSTER_GVK, name)
