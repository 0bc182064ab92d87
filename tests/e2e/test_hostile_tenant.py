"""End to end: every hostile tenant input of issue #26 at once, and the loop keeps its beat.

One controller-manager (leader-elected, /metrics served over HTTPS behind TokenReview) gets, all
at the same time:

- a namespaced OverridePolicy turning a ConfigMap into a ClusterRoleBinding to cluster-admin,
  and one moving a ConfigMap to another namespace: the bindings are WorksSynced=False naming the
  entry that changed the identity, and nothing of either reaches a member;
- a 400-byte YAML alias bomb in a ConfigMap value that a fieldOverrider edits: refused before it
  expands (17.9 MB in 23 s before), WorksSynced=False;
- a member object squatting a template's name, labelled ``karmada.io/managed=true`` but naming no
  Work: member1's Work is Applied=False saying so and the squatter is left as it was;
- a Cluster pointing its apiEndpoint at a listener of the tenant's and its secretRef at member1's
  Secret: Ready=False ``SecretNotBound``, and the listener never hears from us;
- a member joined with a token of its minimum lifetime (10 minutes): TokenExpiring=True,
  ``TokenExpiresSoon``, with a Warning Event, before it lapses;
- a ResourceInterpreterCustomization whose ReviseReplica loops (in Lua and in a C pattern): the
  bindings of its kind are WorksSynced=False naming the script;
- a PropagationPolicy whose statePreservation jsonPath is the backtracking filter of the issue
  (30 s per match in the old regex): the eviction is refused with a Warning Event;
- an interpreter webhook (for ReplicaSets) answering ReviseReplica with a JSON Patch copy bomb:
  refused at the accumulated-copy cap, WorksSynced=False;
- 200 concurrent scrapes of /metrics with made-up tokens: each is 401 or 429, none waits long;

while a well-behaved Deployment propagates 2:1. Throughout, a ticker on the event loop measures
its lag (no tick late by more than ``MAX_LAG``) and the Lease is watched (renewed, never lost: a
lost Lease would also end the manager, and this test, with ``LeadershipLost``).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import itertools
import json
import ssl
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import aiohttp
import anyio
import pytest
from aiohttp import web

from controllers.api import (
    CLUSTER_GVK,
    RESOURCE_BINDING_GVK,
    WORK_APPLIED_CONDITION,
    WORK_GVK,
)
from controllers.binding import work_name
from controllers.cluster.binding import SECRET_NOT_BOUND
from controllers.cluster.expiry import TOKEN_EXPIRING_CONDITION
from controllers.interpreter import Operation
from controllers.join import join_cluster
from reconcile import GVK, Condition, ManagerOptions, get_condition
from testenv import Environment, eventually
from testenv.certs import CertificateAuthority
from tests.builders import configmap, delete_and_wait, deployment, get_or_none
from tests.e2e.stack import (
    FAST_HEALTH,
    OVERRIDE,
    POLICY,
    Stack,
    cluster_ready,
    new_deployment,
    new_policy,
    running,
    tcp_listener,
    warning_event,
    works_synced_failure,
)
from tests.e2e.test_application_failover import setup_template, write_status

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

TICK: Final = 0.05
MAX_LAG: Final = 1.0
LEASE: Final = GVK("coordination.k8s.io", "v1", "Lease")
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 0.5
STATEFULSET: Final = GVK("apps", "v1", "StatefulSet")
CONFIG_MAP: Final = GVK("", "v1", "ConfigMap")
SECRET: Final = GVK("", "v1", "Secret")
CLUSTER_ROLE_BINDING: Final = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")
CLUSTER_ADMIN: Final = {
    "apiGroup": "rbac.authorization.k8s.io",
    "kind": "ClusterRole",
    "name": "cluster-admin",
}
CUSTOMIZATION: Final = GVK("config.karmada.io", "v1alpha1", "ResourceInterpreterCustomization")
HOG: Final = "hostile-tenant-statefulsets"
REPLICASET: Final = GVK("apps", "v1", "ReplicaSet")
WEBHOOK: Final = GVK("config.karmada.io", "v1alpha1", "ResourceInterpreterWebhookConfiguration")
BOMB: Final = "hostile-tenant-bomb"
# The filter of issue #26 item 2: 30.8 s in the backtracking regex it replaced.
REDOS: Final = "{[?(@" + " " * 500 + "==" + " " * 500 + "x]}"
FLOOD: Final = 200

Trigger = Callable[[Stack], Coroutine[Any, Any, None]]


async def test_hostile_tenant_input_at_once(joined: Environment, namespace: str) -> None:
    lease_name = f"hostile-{namespace}"
    options = ManagerOptions(
        metrics_bind_address="127.0.0.1:0",
        metrics_secure=True,
        leader_election=True,
        leader_election_id=lease_name,
        leader_election_namespace=namespace,
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
    )
    lags: list[float] = []
    renewals: list[tuple[str, datetime]] = []
    async with (
        running(joined, namespace, health=FAST_HEALTH, options=options) as stack,
        anyio.create_task_group() as watchers,
    ):
        watchers.start_soon(_tick, lags)
        watchers.start_soon(_watch_lease, stack, lease_name, renewals)
        try:
            async with anyio.create_task_group() as group:
                for trigger in TRIGGERS:
                    group.start_soon(trigger, stack)
        finally:
            watchers.cancel_scope.cancel()
    assert lags, "the ticker never ran"
    assert max(lags) <= MAX_LAG, f"the event loop stalled {max(lags):.2f} s"
    holders = {holder for holder, _ in renewals}
    assert len(holders) == 1, f"the Lease changed hands: {holders}"
    times = sorted({renewed for _, renewed in renewals})
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert len(times) >= 3, "the Lease was not renewed while the triggers ran"
    assert max(gaps) < RENEW_DEADLINE, f"a renewal came {max(gaps):.2f} s after the last"


async def _tick(lags: list[float]) -> None:
    """Sleep ``TICK`` over and over; record how late each wake-up was."""
    while True:
        start = anyio.current_time()
        await anyio.sleep(TICK)
        lags.append(anyio.current_time() - start - TICK)


async def _watch_lease(stack: Stack, name: str, renewals: list[tuple[str, datetime]]) -> None:
    """Record the Lease's holder and renewTime every half retry period."""
    while True:
        lease = await stack.host.get(LEASE, name, namespace=stack.namespace)
        spec = lease.get("spec") or {}
        renewed = datetime.fromisoformat(str(spec["renewTime"]).replace("Z", "+00:00"))
        renewals.append((str(spec.get("holderIdentity")), renewed))
        await anyio.sleep(RETRY_PERIOD / 2)


async def _well_behaved(stack: Stack) -> None:
    await stack.host.create(new_deployment("web", stack.namespace, 3))
    await stack.host.create(new_policy("web", stack.namespace, "web"))
    await stack.wait_replicas("web", {"member1": 2, "member2": 1})


async def _escalation(stack: Stack) -> None:
    """Item 1: overrides that would make a ConfigMap a cluster-admin binding, or move it to
    another namespace, are refused; nothing of either reaches a member."""
    ns = stack.namespace
    moves = {
        "escalate": [
            {"path": "/kind", "operator": "replace", "value": "ClusterRoleBinding"},
            {"path": "/apiVersion", "operator": "replace", "value": "rbac.authorization.k8s.io/v1"},
            {"path": "/metadata/namespace", "operator": "remove"},
            {"path": "/roleRef", "operator": "add", "value": CLUSTER_ADMIN},
        ],
        "relocate": [{"path": "/metadata/namespace", "operator": "replace", "value": "default"}],
    }
    for name, plaintext in moves.items():
        await stack.host.create(configmap(name, ns, key="value"))
        selector = [{"apiVersion": "v1", "kind": "ConfigMap", "name": name}]
        rule = {"overriders": {"plaintext": plaintext}}
        spec = {"resourceSelectors": selector, "overrideRules": [rule]}
        await stack.host.create(
            {"apiVersion": OVERRIDE.api_version, "kind": OVERRIDE.kind}
            | {"metadata": {"name": name, "namespace": ns}, "spec": spec}
        )
        policy = new_policy(name, ns, name)
        policy["spec"]["resourceSelectors"] = selector
        await stack.host.create(policy)
    for name in moves:
        message = await works_synced_failure(stack, f"{name}-configmap")
        assert "plaintext[0]: changes the object's identity" in message, message
    for member in stack.members.values():
        assert await get_or_none(member, CLUSTER_ROLE_BINDING, "escalate") is None
        assert await get_or_none(member, CONFIG_MAP, "relocate", "default") is None
        for name in moves:
            assert await get_or_none(member, CONFIG_MAP, name, ns) is None


async def _alias_bomb(stack: Stack) -> None:
    """Item 3: a YAML alias bomb in a ConfigMap value edited by a fieldOverrider is refused
    before it expands."""
    ns = stack.namespace
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{n}: &a{n} [{','.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 9)]
    await stack.host.create(configmap("laughs", ns, config="\n".join(lines)))
    selector = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "laughs"}]
    edit = {"subPath": "/a0/0", "operator": "replace", "value": "x"}
    field = {"fieldPath": "/data/config", "yaml": [edit]}
    spec = {
        "resourceSelectors": selector,
        "overrideRules": [{"overriders": {"fieldOverrider": [field]}}],
    }
    await stack.host.create(
        {"apiVersion": OVERRIDE.api_version, "kind": OVERRIDE.kind}
        | {"metadata": {"name": "laughs", "namespace": ns}, "spec": spec}
    )
    policy = new_policy("laughs", ns, "laughs")
    policy["spec"]["resourceSelectors"] = selector
    await stack.host.create(policy)
    message = await works_synced_failure(stack, "laughs-configmap")
    assert "fieldOverrider[0]" in message, message
    assert "anchors and aliases are not supported" in message, message
    for member in stack.members.values():
        assert await get_or_none(member, CONFIG_MAP, "laughs", ns) is None


async def _squatter(stack: Stack) -> None:
    """Item 5: a member object labelled managed but naming no Work is not taken over."""
    ns = stack.namespace
    squatter = deployment("squat", ns, 7, labels={"karmada.io/managed": "true"})
    await stack.members["member1"].create(squatter)
    await stack.host.create(new_deployment("squat", ns, 3))
    await stack.host.create(new_policy("squat", ns, "squat"))
    condition = await _applied(stack, "member1", "squat", "False")
    assert "names no Work" in condition["message"], condition
    await stack.wait_replicas("squat", {"member1": 7, "member2": 1})
    left = await stack.member_deployment("member1", "squat")
    assert left is not None
    assert "karmada.io/managed" in left["metadata"]["labels"]
    assert "work.karmada.io/name" not in (left["metadata"].get("annotations") or {})


async def _thief(stack: Stack) -> None:
    """Item 6: a Cluster cannot borrow another member's Secret."""
    name = f"thief-{stack.namespace[-6:]}"
    member1 = await stack.host.get(CLUSTER_GVK, "member1")
    async with tcp_listener() as (port, heard):
        spec = {
            "apiEndpoint": f"https://127.0.0.1:{port}",
            "secretRef": member1["spec"]["secretRef"],
            "syncMode": "Push",
        }
        metadata = {"name": name}
        await stack.host.create(
            {"apiVersion": CLUSTER_GVK.api_version, "kind": "Cluster", "metadata": metadata}
            | {"spec": spec}
        )
        try:
            condition = await cluster_ready(stack, name, "False")
            assert condition["reason"] == SECRET_NOT_BOUND, condition
        finally:
            await delete_and_wait(stack.host, CLUSTER_GVK, name, timeout=60)
        assert heard == [], "the token went to the tenant's endpoint"


async def _short_token(stack: Stack) -> None:
    """Item 7: a token of the member's minimum lifetime is flagged before it lapses."""
    name = f"short-{stack.namespace[-6:]}"
    member1 = str(stack.env.members["member1"].kubeconfig)
    await join_cluster(name, host=stack.host, member_kubeconfig=member1, token_seconds=600)
    try:

        async def expiring() -> dict[str, Any] | None:
            cluster = await stack.host.get(CLUSTER_GVK, name)
            condition = get_condition(cluster, TOKEN_EXPIRING_CONDITION)
            return dict(condition) if condition and condition["status"] == "True" else None

        condition = await eventually(expiring, timeout=90, interval=0.3)
        assert condition["reason"] == "TokenExpiresSoon", condition
        assert "reconcile join NAME --refresh" in condition["message"], condition
        assert await warning_event(stack, name, "TokenExpiresSoon", namespace="default")
    finally:
        await delete_and_wait(stack.host, CLUSTER_GVK, name, timeout=60)
        await delete_and_wait(stack.host, SECRET, name, "karmada-cluster")


def _customization() -> dict[str, Any]:
    script = (
        "function ReviseReplica(obj, replicas)\n"
        '  if obj.metadata.name == "spin" then while true do end end\n'
        '  if obj.metadata.name == "pattern" then\n'
        '    string.find(string.rep("a", 350), "a-a-a-a-b")\n'
        "  end\n"
        "  return obj\n"
        "end"
    )
    return {
        "apiVersion": CUSTOMIZATION.api_version,
        "kind": CUSTOMIZATION.kind,
        "metadata": {"name": HOG},
        "spec": {
            "target": {"apiVersion": "apps/v1", "kind": "StatefulSet"},
            "customizations": {"replicaRevision": {"luaScript": script}},
        },
    }


async def _lua_hog(stack: Stack) -> None:
    """Item 8: Lua that never returns costs its kind's bindings, nobody else's."""
    ns = stack.namespace
    await stack.host.create(_customization())
    try:
        interpreter = stack.context.interpreter

        async def in_effect() -> bool:
            source = interpreter.source_for(STATEFULSET, Operation.REVISE_REPLICA)
            return source is interpreter.customizations

        await eventually(in_effect, timeout=60)
        policy = new_policy("statefulsets", ns, "")
        policy["spec"]["resourceSelectors"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet"}]
        await stack.host.create(policy)
        for name in ("spin", "pattern"):
            await stack.host.create(deployment(name, ns, 3, kind="StatefulSet"))
        for name in ("spin", "pattern"):
            message = await works_synced_failure(stack, f"{name}-statefulset")
            assert f"{HOG}/replicaRevision" in message, message
        for member in stack.members.values():
            assert not (await member.list(STATEFULSET, namespace=ns))["items"]
    finally:
        await stack.host.delete(CUSTOMIZATION, HOG)


async def _backtracking_jsonpath(stack: Stack) -> None:
    """Item 2: the filter that took 30 s in a regex is refused at once, the eviction waits."""
    await setup_template(stack, "redos", 1, {"member1": 1})
    policy = await stack.host.get(POLICY, "redos", namespace=stack.namespace)
    updated = copy.deepcopy(policy)
    rules = [{"aliasLabelName": "failover.reconcile.io/state", "jsonPath": REDOS}]
    updated["spec"]["failover"] = {
        "application": {
            "decisionConditions": {"tolerationSeconds": 1},
            "purgeMode": "Immediately",
            "statePreservation": {"rules": rules},
        }
    }
    await stack.host.update(updated)

    async def copied() -> bool:
        binding = await stack.host.get(
            RESOURCE_BINDING_GVK, "redos-deployment", namespace=stack.namespace
        )
        return bool((binding["spec"].get("failover") or {}).get("application"))

    await eventually(copied, timeout=60)
    await write_status(stack, "member1", "redos", ready=False)
    event = await warning_event(stack, "redos-deployment", "EvictWorkloadFromClusterFailed")
    # The message quotes the jsonPath, cut to what an Event holds.
    assert event["message"].startswith("Evict from cluster member1 failed: jsonPath"), event
    assert await stack.member_deployment("member1", "redos") is not None


def _copy_bomb(request: dict[str, Any]) -> dict[str, Any]:
    """An interpreter webhook's answer: 1.4 KB of JSON Patch that would build 150 MB."""
    operations = [
        {"op": "add", "path": "/spec/x", "value": []},
        {"op": "copy", "from": "/metadata/labels", "path": "/spec/x/-"},
        *[{"op": "copy", "from": "/spec/x", "path": "/spec/x/-"}] * 22,
    ]
    patch = base64.b64encode(json.dumps(operations).encode()).decode()
    uid = request["request"]["uid"]
    response = {"uid": uid, "successful": True, "patchType": "JSONPatch", "patch": patch}
    return {"apiVersion": WEBHOOK.api_version, "kind": "ResourceInterpreterContext"} | {
        "response": response
    }


@contextlib.asynccontextmanager
async def _bombing_webhook() -> AsyncIterator[tuple[str, bytes]]:
    """An HTTPS interpreter webhook answering every call with ``_copy_bomb``; yields its URL and
    the CA that signed its certificate."""

    async def answer(request: web.Request) -> web.Response:
        return web.json_response(_copy_bomb(await request.json()))

    authority = CertificateAuthority("hostile-webhook-ca")
    app = web.Application()
    app.router.add_post("/interpret", answer)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    with tempfile.TemporaryDirectory() as directory:
        pair = authority.issue_serving(["127.0.0.1"])
        cert, key = pair.write(Path(directory), "serving")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        try:
            site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
            await site.start()
            yield f"https://127.0.0.1:{runner.addresses[0][1]}/interpret", authority.cert_pem
        finally:
            await runner.cleanup()


async def _webhook_copy_bomb(stack: Stack) -> None:
    """Item 4: a webhook's copy bomb is refused at the accumulated-copy cap."""
    ns = stack.namespace
    async with _bombing_webhook() as (url, ca_pem):
        rule = {
            "operations": ["ReviseReplica"],
            "apiGroups": ["apps"],
            "apiVersions": ["v1"],
            "kinds": ["ReplicaSet"],
        }
        hook = {
            "name": "bomb.hostile.example",
            "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem).decode()},
            "rules": [rule],
            "interpreterContextVersions": ["v1alpha1"],
        }
        configuration = {"apiVersion": WEBHOOK.api_version, "kind": WEBHOOK.kind}
        await stack.host.create(configuration | {"metadata": {"name": BOMB}, "webhooks": [hook]})
        try:
            interpreter = stack.context.interpreter

            async def known() -> bool:
                return BOMB in interpreter.webhook_names()

            await eventually(known, timeout=60)
            policy = new_policy("replicasets", ns, "")
            policy["spec"]["resourceSelectors"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet"}]
            await stack.host.create(policy)
            await stack.host.create(deployment("bomb", ns, 3, kind="ReplicaSet"))
            message = await works_synced_failure(stack, "bomb-replicaset")
            assert "accumulated copy size" in message, message
            for member in stack.members.values():
                assert not (await member.list(REPLICASET, namespace=ns))["items"]
        finally:
            await stack.host.delete(WEBHOOK, BOMB)


async def _metrics_flood(stack: Stack) -> None:
    """Item 9: made-up tokens get 401 (or 429 once the reviews are full), never a long wait."""
    certificate = stack.manager.metrics_certificate
    assert certificate is not None
    context = ssl.create_default_context(cadata=certificate.cert_pem.decode())
    url = f"https://127.0.0.1:{stack.manager.metrics_port}/metrics"
    statuses: list[int] = []

    async def scrape(http: aiohttp.ClientSession, index: int) -> None:
        headers = {"Authorization": f"Bearer not-a-token-{index}"}
        async with http.get(url, ssl=context, headers=headers) as response:
            statuses.append(response.status)

    with anyio.fail_after(30):
        async with aiohttp.ClientSession() as http, anyio.create_task_group() as group:
            for index in range(FLOOD):
                group.start_soon(scrape, http, index)
    assert len(statuses) == FLOOD
    assert set(statuses) <= {401, 429}, sorted(set(statuses))
    assert 401 in statuses


TRIGGERS: Final[tuple[Trigger, ...]] = (
    _well_behaved,
    _escalation,
    _alias_bomb,
    _squatter,
    _thief,
    _short_token,
    _lua_hog,
    _backtracking_jsonpath,
    _webhook_copy_bomb,
    _metrics_flood,
)


async def _applied(stack: Stack, cluster: str, template: str, status: str) -> Condition:
    name = work_name("Deployment", template, stack.namespace)

    async def matches() -> Condition | None:
        work = await get_or_none(stack.host, WORK_GVK, name, f"karmada-es-{cluster}")
        condition = get_condition(work, WORK_APPLIED_CONDITION) if work else None
        return condition if condition and condition.get("status") == status else None

    return await eventually(matches, timeout=90, interval=0.3)
