"""End to end: a hostile ResourceInterpreterCustomization hurts only the objects of its kind.

One customization for StatefulSets runs, in ReviseReplica, each Lua probe of issue #10 (chosen by
the template's name): an ``xpcall`` handler that loops, a replaced ``debug.traceback``, string
patterns that run for minutes in C or crash the Lua VM, and a result that references one subtable
millions of times. Each StatefulSet's binding is reported (WorksSynced=False naming the script and
the limit it hit, plus a Warning Event), while a Deployment created alongside reaches both members
2:1 and has its status aggregated back. The probes that kill their worker, retried, soon get the
script quarantined by the worker pool (issue #26): a binding retried then reports the quarantine
(which names the last limit hit) instead, and the customization gets a Warning Event Quarantined.

The StatefulSets are created once the customization is in effect: the controller-manager loads
customizations from its informer (as Karmada's ConfigurableInterpreter does), so a template
propagated before that is revised by the native interpreter, and its Work stays on the member when
the customization later fails it (a failed Work build leaves the existing Work, as Karmada's
ensureWork does).
"""

from __future__ import annotations

from typing import Any, Final

import pytest

from controllers.binding.controller import SYNC_WORK_FAILED_REASON
from controllers.interpreter import Operation
from controllers.interpreterconfig import QUARANTINED_REASON
from reconcile import GVK
from testenv import Environment, eventually
from tests.e2e.stack import (
    DEPLOYMENT,
    Stack,
    new_deployment,
    new_policy,
    running,
    warning_event,
    works_synced_failure,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

STATEFULSET = GVK("apps", "v1", "StatefulSet")
SCRIPT_NAME: Final = "hostile-statefulsets/replicaRevision"

# Each probe's Lua, and what the report must say about the limit it hit.
PROBES: Final = {
    "xpcall": (
        'xpcall(function() error("x") end, function(e) while true do end end)',
        "ran longer than 1 s",
    ),
    "traceback": (
        'debug.traceback = function() while true do end end\n    error("x")',
        "debug.traceback cannot be changed",
    ),
    "pattern": ('string.find(string.rep("a", 350), "a-a-a-a-b")', "its worker was killed after"),
    "crash": (
        'string.find(string.rep("a", 200000), string.rep("a?", 200000))',
        "its worker died of SIGSEGV",
    ),
    "shared": (
        "local t = {x = 1}\n"
        '    for d = 1, 5 do local n = {} for i = 1, 30 do n["k" .. i] = t end t = n end\n'
        "    return {spec = t}",
        "more than",
    ),
}


def customization() -> dict[str, Any]:
    branches = "\n".join(
        f'  if obj.metadata.name == "{name}" then\n    {lua}\n  end'
        for name, (lua, _) in PROBES.items()
    )
    script = f"function ReviseReplica(obj, replicas)\n{branches}\n  return obj\nend"
    return {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": "hostile-statefulsets"},
        "spec": {
            "target": {"apiVersion": "apps/v1", "kind": "StatefulSet"},
            "customizations": {"replicaRevision": {"luaScript": script}},
        },
    }


def statefulset(name: str, namespace: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 3,
            "serviceName": name,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
            },
        },
    }


async def test_a_hostile_customization_is_reported_and_others_keep_propagating(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        try:
            await _hostile_customization(stack)
        finally:
            await stack.host.delete(
                GVK("config.karmada.io", "v1alpha1", "ResourceInterpreterCustomization"),
                "hostile-statefulsets",
            )


async def _hostile_customization(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(customization())
    await eventually(lambda: _in_effect(stack), timeout=60)
    policy = new_policy("statefulsets", ns, "")
    policy["spec"]["resourceSelectors"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet"}]
    await stack.host.create(policy)
    for name in PROBES:
        await stack.host.create(statefulset(name, ns))

    await stack.host.create(new_deployment("web", ns, 3))
    await stack.host.create(new_policy("web", ns, "web"))
    await stack.wait_replicas("web", {"member1": 2, "member2": 1})
    await stack.report_ready("web")

    async def aggregated() -> bool:
        template = await stack.host.get(DEPLOYMENT, "web", namespace=ns)
        return (template.get("status") or {}).get("readyReplicas") == 3

    await eventually(aggregated, timeout=60)

    for name, (_, limit) in PROBES.items():
        message = await works_synced_failure(stack, f"{name}-statefulset")
        assert SCRIPT_NAME in message, message
        assert limit in message or "was not run: quarantined" in message, message
        assert await warning_event(stack, f"{name}-statefulset", SYNC_WORK_FAILED_REASON)
        for member in stack.members.values():
            assert not (await member.list(STATEFULSET, namespace=ns))["items"]
    # Retried, the looping and crashing probes cost a worker each time: the pool quarantines the
    # script and says so on the customization (not namespaced: its Events go to "default").
    assert await warning_event(
        stack, "hostile-statefulsets", QUARANTINED_REASON, namespace="default"
    )


async def _in_effect(stack: Stack) -> bool:
    """Whether the interpreter revises StatefulSets with the customization (not natively)."""
    interpreter = stack.context.interpreter
    source = interpreter.source_for(STATEFULSET, Operation.REVISE_REPLICA)
    return source is interpreter.customizations
