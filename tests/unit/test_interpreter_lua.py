"""Lua customizations run Karmada's script functions in a sandbox, converting values faithfully.

Three customizations written for this project are exercised operation by operation (the bundled
CloneSet, Argo Workflow and PyTorchJob ones: Deployment-like, Job-like, with components), then the
sandbox: bad scripts fail with typed, clear errors and the next call still works.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from controllers.interpreter import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    LuaLimitExceeded,
    LuaReturnTypeError,
    LuaRuntimeError,
    LuaScript,
    LuaSyntaxError,
    LuaTimeout,
    NodeClaim,
    Operation,
    ReplicaRequirements,
    bundled_customizations,
)
from reconcile import GVK

asyncio_test = pytest.mark.asyncio(loop_scope="session")
"""Marks the async tests (strict mode)."""

Obj = dict[str, Any]
CLONE_SET = GVK("apps.kruise.io", "v1alpha1", "CloneSet")
WORKFLOW = GVK("argoproj.io", "v1alpha1", "Workflow")
PYTORCH_JOB = GVK("kubeflow.org", "v1", "PyTorchJob")
GENERATION_ANNOTATION = "resourcetemplate.karmada.io/generation"


def script(gvk: GVK, operation: Operation) -> LuaScript:
    found = bundled_customizations().script_for(gvk, operation)
    assert found is not None, f"no bundled {operation} for {gvk}"
    return found


def lua(source: str, operation: Operation = Operation.INTERPRET_REPLICA, **kw: Any) -> LuaScript:
    return LuaScript(source, operation, name="test", **kw)


def item(cluster: str, status: Obj | None) -> AggregatedStatusItem:
    return AggregatedStatusItem(cluster, status, applied=status is not None)


# --- a CloneSet-like kind -----------------------------------------------------------------------

POD_TEMPLATE: Obj = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "containers": [
            {"name": "web", "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
             "envFrom": [{"configMapRef": {"name": "web-config"}}]},
            {"name": "sidecar", "resources": {"limits": {"cpu": "250m"}}},
        ],
        "nodeSelector": {"disk": "ssd"},
        "imagePullSecrets": [{"name": "registry"}],
    },
}  # fmt: skip
CLONE: Obj = {
    "apiVersion": "apps.kruise.io/v1alpha1",
    "kind": "CloneSet",
    "metadata": {"name": "web", "namespace": "shop", "generation": 5, "labels": {}},
    "spec": {"replicas": 4, "template": POD_TEMPLATE, "updateStrategy": {"partition": 0}},
    "status": {"observedGeneration": 4, "replicas": 4, "conditions": []},
}


def without_empties(value: Any) -> Any:
    """``value`` without the empty objects and lists under its root (nested: one level each)."""
    if isinstance(value, dict):
        return {k: without_empties(v) for k, v in value.items() if v != {} and v != []}
    if isinstance(value, list):
        return [without_empties(v) for v in value if v != {} and v != []]
    return value


def member_clone(
    replicas: int, *, generation: int = 2, observed: int = 2, template: int = 5
) -> Obj:
    return {
        "replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
        "updatedReplicas": replicas, "observedGeneration": observed, "generation": generation,
        "resourceTemplateGeneration": template, "updateRevision": "web-v5",
    }  # fmt: skip


@asyncio_test
async def test_clone_set_replicas_and_requirements() -> None:
    before = copy.deepcopy(CLONE)
    assert await script(CLONE_SET, Operation.INTERPRET_REPLICA).get_replicas(CLONE) == (
        4,
        ReplicaRequirements(
            node_claim=NodeClaim(node_selector={"disk": "ssd"}),
            resource_request={"cpu": "500m", "memory": "256Mi"},
            namespace="shop",
        ),
    )
    assert before == CLONE
    bare = {**CLONE, "spec": {}}
    assert await script(CLONE_SET, Operation.INTERPRET_REPLICA).get_replicas(bare) == (1, None)


@asyncio_test
async def test_clone_set_revise_and_retain() -> None:
    revised = await script(CLONE_SET, Operation.REVISE_REPLICA).revise_replica(CLONE, 2)
    assert revised["spec"]["replicas"] == 2
    assert revised["spec"]["template"] == POD_TEMPLATE
    assert revised["metadata"]["labels"] == {}  # an input {} stays an object
    assert CLONE["spec"]["replicas"] == 4
    observed = {**CLONE, "spec": {**CLONE["spec"], "updateStrategy": {"paused": True}}}
    retain = script(CLONE_SET, Operation.RETAIN)
    assert (await retain.retain(CLONE, observed))["spec"]["updateStrategy"] == {
        "partition": 0,
        "paused": True,
    }
    assert await retain.retain(CLONE, {**CLONE, "spec": {}}) == CLONE


@asyncio_test
async def test_clone_set_reflects_status_with_generations() -> None:
    member = {
        **CLONE,
        "metadata": {"generation": 2, "annotations": {GENERATION_ANNOTATION: "5"}},
        "status": {"replicas": 2, "readyReplicas": 2, "observedGeneration": 2, "other": "x"},
    }
    reflect = script(CLONE_SET, Operation.INTERPRET_STATUS)
    assert await reflect.reflect_status(member) == {
        "replicas": 2, "readyReplicas": 2, "observedGeneration": 2, "generation": 2,
        "resourceTemplateGeneration": 5,
    }  # fmt: skip
    assert await reflect.reflect_status({**CLONE, "status": None}) is None


@asyncio_test
async def test_clone_set_aggregates_and_observes_generation_only_when_every_member_is_current() -> (
    None
):
    aggregate = script(CLONE_SET, Operation.AGGREGATE_STATUS)
    current = await aggregate.aggregate_status(
        CLONE, [item("a", member_clone(1)), item("b", member_clone(3))]
    )
    assert current["status"]["replicas"] == 4
    assert current["status"]["readyReplicas"] == 4
    assert current["status"]["observedGeneration"] == 5
    assert current["status"]["updateRevision"] == "web-v5"
    # Karmada gives AggregateStatus no references: every empty table of the result is dropped.
    assert "conditions" not in current["status"]
    assert "labels" not in current["metadata"]
    for stale in (member_clone(3, template=4), member_clone(3, generation=3, observed=2), None):
        mixed = await aggregate.aggregate_status(
            CLONE, [item("a", member_clone(1)), item("b", stale)]
        )
        assert mixed["status"]["observedGeneration"] == 4, stale


@asyncio_test
async def test_clone_set_aggregation_of_no_members_leaves_the_template() -> None:
    aggregated = await script(CLONE_SET, Operation.AGGREGATE_STATUS).aggregate_status(CLONE, [])
    assert aggregated == without_empties(CLONE)  # no references: empty tables dropped


@pytest.mark.parametrize(
    ("status", "healthy"),
    [
        ({"observedGeneration": 5, "updatedReplicas": 4, "availableReplicas": 4}, True),
        ({"observedGeneration": 4, "updatedReplicas": 4, "availableReplicas": 4}, False),
        ({"observedGeneration": 5, "updatedReplicas": 2, "availableReplicas": 2}, False),
        ({"observedGeneration": 5, "updatedReplicas": 4, "availableReplicas": 3}, False),
        (None, False),
    ],
    ids=["rolled-out", "old-generation", "updating", "unavailable", "no-status"],
)
@asyncio_test
async def test_clone_set_health(status: Obj | None, healthy: bool) -> None:
    member = {**CLONE, "status": status}
    assert await script(CLONE_SET, Operation.INTERPRET_HEALTH).interpret_health(member) is healthy


@asyncio_test
async def test_clone_set_dependencies_and_component() -> None:
    assert await script(CLONE_SET, Operation.INTERPRET_DEPENDENCY).get_dependencies(CLONE) == [
        DependentObjectReference("v1", "ConfigMap", namespace="shop", name="web-config"),
        DependentObjectReference("v1", "Secret", namespace="shop", name="registry"),
    ]
    bare = {**CLONE, "spec": {"template": {"spec": {"containers": []}}}}
    assert await script(CLONE_SET, Operation.INTERPRET_DEPENDENCY).get_dependencies(bare) == []
    [component] = await script(CLONE_SET, Operation.INTERPRET_COMPONENT).get_components(CLONE)
    assert component.name == "main"
    assert component.replicas == 4
    assert component.replica_requirements is not None
    assert component.replica_requirements.resource_request == {"cpu": "500m", "memory": "256Mi"}


# --- a Job-like kind ----------------------------------------------------------------------------

FLOW: Obj = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Workflow",
    "metadata": {"name": "etl", "namespace": "data"},
    "spec": {
        "parallelism": 3,
        "serviceAccountName": "runner",
        "nodeSelector": {"pool": "batch"},
        "volumes": [{"name": "in", "persistentVolumeClaim": {"claimName": "input"}}],
        "templates": [
            {"name": "extract",
             "container": {"image": "x", "envFrom": [{"secretRef": {"name": "db"}}]}},
            {"name": "load", "script": {"image": "y", "env": [
                {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "settings"}}}]}},
            {"name": "steps", "steps": []},
        ],
    },
}  # fmt: skip


@asyncio_test
async def test_workflow_replicas_revise_and_retain() -> None:
    replicas, requires = await script(WORKFLOW, Operation.INTERPRET_REPLICA).get_replicas(FLOW)
    assert replicas == 3
    assert requires == ReplicaRequirements(
        node_claim=NodeClaim({"pool": "batch"}), namespace="data"
    )
    assert (await script(WORKFLOW, Operation.INTERPRET_REPLICA).get_replicas({**FLOW, "spec": {}}))[
        0
    ] == 1
    revised = await script(WORKFLOW, Operation.REVISE_REPLICA).revise_replica(FLOW, 1)
    assert revised["spec"]["parallelism"] == 1
    assert revised["spec"]["templates"][2] == {"name": "steps", "steps": []}
    observed = {**FLOW, "spec": {"suspend": True}}
    retained = await script(WORKFLOW, Operation.RETAIN).retain(FLOW, observed)
    assert retained["spec"]["suspend"] is True
    assert "shutdown" not in retained["spec"]


@asyncio_test
async def test_workflow_status_reflection_and_aggregation() -> None:
    reflect = script(WORKFLOW, Operation.INTERPRET_STATUS)
    observed = {**FLOW, "status": {"phase": "Running", "progress": "1/4", "nodes": {"a": {}}}}
    assert await reflect.reflect_status(observed) == {"phase": "Running", "progress": "1/4"}
    assert await reflect.reflect_status(FLOW) is None
    aggregate = script(WORKFLOW, Operation.AGGREGATE_STATUS)
    done = {"phase": "Succeeded", "progress": "2/2", "startedAt": "2024-01-01T00:00:00Z",
            "finishedAt": "2024-01-01T01:00:00Z"}  # fmt: skip
    running = {"phase": "Running", "progress": "1/3", "startedAt": "2024-01-01T00:10:00Z",
               "message": "step 2"}  # fmt: skip
    status = (await aggregate.aggregate_status(FLOW, [item("a", done), item("b", running)]))[
        "status"
    ]
    assert status == {"phase": "Running", "progress": "3/5", "startedAt": "2024-01-01T00:00:00Z",
                      "message": "b: step 2"}  # fmt: skip
    finished = await aggregate.aggregate_status(
        FLOW, [item("a", done), item("b", {**done, "phase": "Failed"})]
    )
    assert finished["status"]["phase"] == "Failed"
    assert finished["status"]["finishedAt"] == "2024-01-01T01:00:00Z"
    unreported = await aggregate.aggregate_status(FLOW, [item("a", done), item("b", None)])
    assert unreported["status"]["phase"] == "Pending"
    assert await aggregate.aggregate_status(FLOW, []) == without_empties(FLOW)


@asyncio_test
async def test_workflow_health_and_dependencies() -> None:
    health = script(WORKFLOW, Operation.INTERPRET_HEALTH)
    assert await health.interpret_health({**FLOW, "status": {"phase": "Running"}}) is True
    assert await health.interpret_health({**FLOW, "status": {"phase": "Error"}}) is False
    assert await health.interpret_health(FLOW) is True
    assert await script(WORKFLOW, Operation.INTERPRET_DEPENDENCY).get_dependencies(FLOW) == [
        DependentObjectReference("v1", "ConfigMap", namespace="data", name="settings"),
        DependentObjectReference("v1", "Secret", namespace="data", name="db"),
        DependentObjectReference("v1", "ServiceAccount", namespace="data", name="runner"),
        DependentObjectReference("v1", "PersistentVolumeClaim", namespace="data", name="input"),
    ]
    assert not bundled_customizations().handles(WORKFLOW, Operation.INTERPRET_COMPONENT)


# --- a kind with components ---------------------------------------------------------------------


def role(replicas: int | None, resources: Obj, **spec: Any) -> Obj:
    out: Obj = {
        "template": {"spec": {"containers": [{"name": "c", "resources": resources}], **spec}}
    }
    if replicas is not None:
        out["replicas"] = replicas
    return out


TRAINING: Obj = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "train", "namespace": "ml"},
    "spec": {
        "pytorchReplicaSpecs": {
            "Master": role(None, {"limits": {"cpu": "1", "nvidia.com/gpu": "1"}}),
            "Worker": role(3, {"requests": {"cpu": "2", "memory": "8Gi"}},
                           volumes=[{"name": "d", "secret": {"secretName": "creds"}}]),
        }
    },
}  # fmt: skip


@asyncio_test
async def test_training_job_components_and_replicas() -> None:
    assert await script(PYTORCH_JOB, Operation.INTERPRET_COMPONENT).get_components(TRAINING) == [
        Component("master", 1, ReplicaRequirements(
            resource_request={"cpu": "1", "nvidia.com/gpu": "1"}, namespace="ml")),
        Component("worker", 3, ReplicaRequirements(
            resource_request={"cpu": "2", "memory": "8Gi"}, namespace="ml")),
    ]  # fmt: skip
    replicas, requires = await script(PYTORCH_JOB, Operation.INTERPRET_REPLICA).get_replicas(
        TRAINING
    )
    assert replicas == 4
    assert requires is not None
    assert requires.resource_request == {"cpu": "2", "memory": "8Gi"}
    empty = {**TRAINING, "spec": {}}
    assert await script(PYTORCH_JOB, Operation.INTERPRET_COMPONENT).get_components(empty) == []
    assert await script(PYTORCH_JOB, Operation.INTERPRET_REPLICA).get_replicas(empty) == (0, None)
    assert not bundled_customizations().handles(PYTORCH_JOB, Operation.REVISE_REPLICA)


@asyncio_test
async def test_training_job_status_health_and_dependencies() -> None:
    conditions = [{"type": "Running", "status": "True"}]
    observed = {**TRAINING, "status": {"conditions": conditions, "replicaStatuses": {
        "Worker": {"active": 3}}, "lastReconcileTime": "t"}}  # fmt: skip
    reflected = await script(PYTORCH_JOB, Operation.INTERPRET_STATUS).reflect_status(observed)
    assert reflected == {"conditions": conditions, "replicaStatuses": {"Worker": {"active": 3}}}
    aggregate = script(PYTORCH_JOB, Operation.AGGREGATE_STATUS)
    status = (await aggregate.aggregate_status(TRAINING, [item("a", reflected), item("b", None)]))[
        "status"
    ]
    assert status == {
        "conditions": conditions,
        "replicaStatuses": {"Worker": {"active": 3, "succeeded": 0, "failed": 0}},
    }
    # Nothing reported: the script's empty replicaStatuses is dropped (it is in no input).
    assert (await aggregate.aggregate_status(TRAINING, [item("a", {})]))["status"] == {}
    assert await aggregate.aggregate_status(TRAINING, []) == TRAINING
    health = script(PYTORCH_JOB, Operation.INTERPRET_HEALTH)
    assert await health.interpret_health(observed) is True
    failed = {**TRAINING, "status": {"conditions": [{"type": "Failed", "status": "True"}]}}
    assert await health.interpret_health(failed) is False
    assert await script(PYTORCH_JOB, Operation.INTERPRET_DEPENDENCY).get_dependencies(TRAINING) == [
        DependentObjectReference("v1", "Secret", namespace="ml", name="creds")
    ]


# --- loading and failing ------------------------------------------------------------------------


@asyncio_test
async def test_a_syntax_error_fails_at_load_with_its_line() -> None:
    with pytest.raises(LuaSyntaxError, match=r"test: luaScript:2: unexpected symbol near '='"):
        await lua("function GetReplicas(obj)\n  return = 1 end").check()


@asyncio_test
async def test_a_script_must_define_its_operations_function() -> None:
    with pytest.raises(LuaSyntaxError, match="must define a global function Retain"):
        await lua("function GetReplicas(obj) return 1 end", Operation.RETAIN).check()


@asyncio_test
async def test_a_failing_top_level_fails_at_load() -> None:
    with pytest.raises(LuaRuntimeError, match="module 'json' not found"):
        await lua('local json = require("json")\nfunction GetReplicas(obj) return 1 end').check()


FLAKY = """
function GetReplicas(obj)
  if obj.spec.mode == "error" then error("no replicas for you") end
  if obj.spec.mode == "nil" then return obj.spec.missing.field end
  if obj.spec.mode == "loop" then while true do end end
  if obj.spec.mode == "swallow" then
    while true do pcall(function() while true do end end) end
  end
  if obj.spec.mode == "memory" then
    local s = "x"
    while true do s = s .. s end
  end
  if obj.spec.mode == "string" then return "3" end
  if obj.spec.mode == "requires" then return 1, "big" end
  return obj.spec.replicas
end
"""


def mode(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "X", "spec": {"mode": name, "replicas": 2}}


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("error", LuaRuntimeError, r"test: luaScript:3: no replicas for you"),
        ("nil", LuaRuntimeError, r"luaScript:4: attempt to index field 'missing' \(a nil value\)"),
        ("swallow", LuaTimeout, r"GetReplicas ran longer than 0.2 s and was stopped"),
        ("memory", LuaLimitExceeded, r"out of memory \(limit 16 MiB\)"),
        ("string", LuaReturnTypeError, r"GetReplicas must return a number first, got string"),
        (
            "requires",
            LuaReturnTypeError,
            r"GetReplicas must return an object \(a table\), got string",
        ),
    ],
)
@asyncio_test
async def test_failures_are_typed_and_the_next_call_works(
    name: str, error: type, message: str
) -> None:
    flaky = lua(FLAKY, timeout=0.2, max_memory=16 * 2**20)
    with pytest.raises(error, match=message):
        await flaky.get_replicas(mode(name))
    assert await flaky.get_replicas(mode("fine")) == (2, None)


@pytest.mark.timeout(30)
@asyncio_test
async def test_an_infinite_loop_is_stopped_by_the_default_one_second_limit() -> None:
    looping = lua(FLAKY)
    with pytest.raises(LuaTimeout, match="longer than 1 s"):
        await looping.get_replicas(mode("loop"))
    assert await looping.get_replicas(mode("fine")) == (2, None)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ('os.execute("touch /tmp/pwned")', "os.execute is not available"),
        ("os.exit(1)", "os.exit is not available"),
        ('os.remove("/etc/passwd")', "os.remove is not available"),
        ('os.getenv("HOME")', "os.getenv is not available"),
        ('io.open("/etc/passwd")', "io.open is not available"),
        ('require("io")', "module 'io' not found"),
        ('loadstring("return 1")()', "loadstring is not available"),
        ('dofile("/etc/passwd")', "dofile is not available"),
        ("setmetatable({}, {})", "setmetatable is not available"),
        ("getmetatable('')", "getmetatable is not available"),
        ("rawset(_G, 'x', 1)", "rawset is not available"),
        ("collectgarbage()", "collectgarbage is not available"),
        ("debug.sethook()", "debug.sethook is not available"),
        ("debug = nil", "debug cannot be replaced"),
        ("debug.traceback = print", "debug.traceback cannot be changed"),
        ("os.exit = print", "os.exit cannot be changed"),
        ("coroutine.create(print)", "coroutine.create is not available"),
        ("string.dump(print)", "attempt to call field 'dump'"),
        ("python.eval('1')", "attempt to index global 'python'"),
    ],
)
@asyncio_test
async def test_the_sandbox_forbids_escapes(code: str, message: str) -> None:
    source = f"function InterpretHealth(obj)\n  {code}\n  return true\nend"
    sandboxed = lua(source, Operation.INTERPRET_HEALTH)
    with pytest.raises(LuaRuntimeError, match=message):
        await sandboxed.interpret_health({})


@asyncio_test
async def test_the_safe_libraries_work() -> None:
    source = """
    function InterpretHealth(obj)
      local t = os.time()
      local d = os.date("!%Y", 0)
      local c = os.clock()
      print("debug output is dropped")
      local s = string.format("%s-%d", string.upper("a"), math.floor(2.7))
      local parts = {}
      for word in string.gmatch("a b c", "%a+") do table.insert(parts, word) end
      local ok, err = pcall(error, "caught")
      return t > 0 and d == "1970" and c >= 0 and s == "A-2" and table.concat(parts) == "abc"
        and not ok and err == "caught" and require("os") == os
    end
    """
    assert await lua(source, Operation.INTERPRET_HEALTH).interpret_health({}) is True


@pytest.mark.parametrize(
    ("operation", "body", "message"),
    [
        (Operation.INTERPRET_HEALTH, "return nil", "must return a boolean, got nil"),
        (Operation.INTERPRET_HEALTH, "return 1", "must return a boolean, got number"),
        (Operation.REVISE_REPLICA, "return 5", r"must return an object \(a table\), got number"),
        (Operation.RETAIN, "return {1, 2}", "must return an object, got a list"),
        (Operation.INTERPRET_DEPENDENCY, "return {a = 1}", "must return a list, got an object"),
        (Operation.INTERPRET_DEPENDENCY, "return {{kind = 'Secret'}}", "needs apiVersion and kind"),
        (Operation.INTERPRET_DEPENDENCY, "return {{apiVersion = 'v1', kind = 'Secret'}}",
         "needs a name or a labelSelector"),
        (Operation.INTERPRET_COMPONENT, "return {{replicas = 1}}", "component needs a name"),
        (Operation.INTERPRET_COMPONENT, "return {{name = 'a', replicas = 'x'}}",
         "replicas must be a number"),
        (Operation.INTERPRET_STATUS, "return {a = 1, [1] = 2}", "mixes string keys"),
        (Operation.INTERPRET_STATUS, "return {a = {[1] = 1, [3] = 3}}", r"\.a: a list must have"),
        (Operation.INTERPRET_STATUS, "return {f = print}", r"\.f: a function has no JSON form"),
        (Operation.INTERPRET_STATUS, "return {n = 0/0}", r"\.n: nan is not a JSON number"),
        (Operation.INTERPRET_STATUS, "local t = {}; t.self = t; return t", "deeper than 100"),
        (Operation.INTERPRET_STATUS, "return 'ok'", r"must return an object \(a table\)"),
    ],
)  # fmt: skip
@asyncio_test
async def test_wrong_return_types_are_clear_errors(
    operation: Operation, body: str, message: str
) -> None:
    function = {
        Operation.INTERPRET_HEALTH: "InterpretHealth(obj)",
        Operation.REVISE_REPLICA: "ReviseReplica(obj, n)",
        Operation.RETAIN: "Retain(desired, observed)",
        Operation.INTERPRET_DEPENDENCY: "GetDependencies(obj)",
        Operation.INTERPRET_COMPONENT: "GetComponents(obj)",
        Operation.INTERPRET_STATUS: "ReflectStatus(obj)",
    }[operation]
    wrong = lua(f"function {function}\n  {body}\nend", operation)
    call: Callable[[], Awaitable[object]] = {
        Operation.INTERPRET_HEALTH: lambda: wrong.interpret_health({}),
        Operation.REVISE_REPLICA: lambda: wrong.revise_replica({}, 1),
        Operation.RETAIN: lambda: wrong.retain({}, {}),
        Operation.INTERPRET_DEPENDENCY: lambda: wrong.get_dependencies({}),
        Operation.INTERPRET_COMPONENT: lambda: wrong.get_components({}),
        Operation.INTERPRET_STATUS: lambda: wrong.reflect_status({}),
    }[operation]
    with pytest.raises(LuaReturnTypeError, match=message):
        await call()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return -1", "GetReplicas returned -1 replicas"),
        ("return 2^31", "GetReplicas returned 2147483648 replicas"),
        ("return 0/0", "GetReplicas returned nan replicas"),
        ("return 1, {namespace = string.char(255)}", "returned non-UTF-8 text"),
        ("return string.char(255)", "a string is not UTF-8"),
    ],
)
@asyncio_test
async def test_replicas_must_be_a_sane_int32(body: str, message: str) -> None:
    wrong = lua(f"function GetReplicas(obj)\n  {body}\nend")
    with pytest.raises(LuaReturnTypeError, match=message):
        await wrong.get_replicas({})


@asyncio_test
async def test_integers_past_64_bits_cross_as_numbers() -> None:
    echo = lua("function ReflectStatus(obj) return {n = obj.n} end", Operation.INTERPRET_STATUS)
    assert await echo.reflect_status({"n": 2**70}) == {"n": 2**70}


@asyncio_test
async def test_a_script_runs_only_its_own_operation() -> None:
    with pytest.raises(ValueError, match="cannot run Retain"):
        await script(CLONE_SET, Operation.INTERPRET_HEALTH).retain({}, {})


# --- values crossing the boundary ---------------------------------------------------------------


@asyncio_test
async def test_numbers_come_back_as_ints_when_integral() -> None:
    source = """
    function ReflectStatus(obj)
      return {a = obj.spec.n * 1.0, b = 2^53, c = 1e20, d = 0.5, e = obj.spec.n / 2, f = -0.0}
    end
    """
    status = await lua(source, Operation.INTERPRET_STATUS).reflect_status({"spec": {"n": 3}})
    assert status == {"a": 3, "b": 2**53, "c": 10**20, "d": 0.5, "e": 1.5, "f": 0}
    assert all(type(status[k]) is int for k in "abcf")


@asyncio_test
async def test_replica_numbers_are_truncated_like_karmada() -> None:
    source = "function GetReplicas(obj) return obj.spec.n / 2 end"
    assert await lua(source).get_replicas({"spec": {"n": 5}}) == (2, None)


EMPTIES: Obj = {
    "metadata": {"labels": {}, "annotations": {"a": "b"}},
    "spec": {"list": [], "map": {}, "nested": [{"inner": []}], "keep": "x"},
}


@asyncio_test
async def test_empty_tables_are_settled_by_path_against_desired_and_observed_like_karmada() -> None:
    source = """
    function Retain(desired, observed)
      desired.spec.touched = desired.spec.list   -- an input [] moved where no input has one
      desired.spec.map.x = nil                   -- an input {} touched, still empty
      desired.metadata.annotations.a = nil       -- emptied where the inputs hold no empty value
      desired.spec.tolerations = {}              -- made by the script; observed has [] here
      desired.spec.selector = {}                 -- made by the script; observed has {} here
      desired.spec.both = {}                     -- desired has [] here, observed {}: {} wins
      desired.spec.extra = {}                    -- made by the script, found in no input
      desired.spec.nested[1].inner = {}          -- inside a list element: indices do not count
      desired.spec.items = {{}, {name = "a"}}    -- an empty element found in no input
      return desired
    end
    """
    desired = copy.deepcopy(EMPTIES)
    desired["spec"]["both"] = []
    observed: Obj = {"spec": {"tolerations": [], "selector": {}, "both": {}}}
    retained = await lua(source, Operation.RETAIN).retain(desired, observed)
    assert retained == {
        "metadata": {"labels": {}},
        "spec": {"list": [], "map": {}, "nested": [{"inner": []}], "keep": "x",
                 "tolerations": [], "selector": {}, "both": {}, "items": [{"name": "a"}]},
    }  # fmt: skip


@asyncio_test
async def test_empty_tables_of_operations_without_references_are_dropped_like_karmada() -> None:
    source = "function ReflectStatus(obj) obj.status.made = {} return obj.status end"
    reflect = lua(source, Operation.INTERPRET_STATUS)
    status = await reflect.reflect_status({"status": {"conditions": [], "meta": {}, "n": 1}})
    assert status == {"n": 1}


@asyncio_test
async def test_empty_results_take_the_operations_shape() -> None:
    assert (
        await lua(
            "function ReflectStatus(o) return {} end", Operation.INTERPRET_STATUS
        ).reflect_status({})
        == {}
    )
    assert (
        await lua(
            "function ReflectStatus(o) return nil end", Operation.INTERPRET_STATUS
        ).reflect_status({})
        is None
    )
    deps = lua("function GetDependencies(o) return {} end", Operation.INTERPRET_DEPENDENCY)
    assert await deps.get_dependencies({}) == []


@asyncio_test
async def test_tables_behave_like_plain_tables_and_results_share_nothing_with_inputs() -> None:
    source = """
    function Retain(desired, observed)
      local keys = {}
      for k, _ in pairs(desired.spec) do table.insert(keys, k) end
      table.sort(keys)
      desired.spec.keys = table.concat(keys, ",")
      desired.spec.count = #desired.spec.items
      table.insert(desired.spec.items, {name = "c"})
      desired.spec.first = next(desired.metadata)
      desired.spec.gone = nil
      desired.spec.copied = observed.status
      local n = 0
      for _, v in ipairs(observed.list) do n = n + v end
      desired.spec.sum = n
      return desired
    end
    """
    desired = {"metadata": {"name": "x"}, "spec": {"items": [{"name": "a"}, {"name": "b"}],
                                                   "gone": 1, "z": {"deep": [1]}}}  # fmt: skip
    observed = {"status": {"ready": [1, 2]}, "list": [1, 2, 3]}
    before = copy.deepcopy((desired, observed))
    retained = await lua(source, Operation.RETAIN).retain(desired, observed)
    assert retained["spec"] == {
        "items": [{"name": "a"}, {"name": "b"}, {"name": "c"}], "z": {"deep": [1]},
        "keys": "gone,items,z", "count": 2, "first": "name", "copied": {"ready": [1, 2]}, "sum": 6,
    }  # fmt: skip
    assert (desired, observed) == before
    retained["spec"]["z"]["deep"].append(2)
    retained["spec"]["copied"]["ready"].append(3)
    assert (desired, observed) == before


@asyncio_test
async def test_status_items_arrive_as_karmada_sends_them_and_none_as_nil() -> None:
    source = """
    function AggregateStatus(obj, items)
      if items == nil then obj.status = {none = true} return obj end
      local seen = {}
      for i, it in ipairs(items) do
        table.insert(seen, it.clusterName .. ":" .. tostring(it.applied) .. ":" ..
          tostring(it.health) .. ":" .. tostring(it.status and it.status.n))
      end
      obj.status = {seen = seen}
      return obj
    end
    """
    aggregate = lua(source, Operation.AGGREGATE_STATUS)
    assert (await aggregate.aggregate_status({}, []))["status"] == {"none": True}
    items = [
        AggregatedStatusItem("a", {"n": 1}, applied=True, health=None),
        AggregatedStatusItem.from_dict({"clusterName": "b", "health": "Unknown"}),
    ]
    assert (await aggregate.aggregate_status({}, items))["status"] == {
        "seen": ["a:true:nil:1", "b:nil:Unknown:nil"]
    }


# --- the kube library ---------------------------------------------------------------------------

KUBE = """
local kube = require("kube")
function ReflectStatus(obj)
  local template = obj.spec.template
  if obj.spec.change then
    template.spec.containers[1].resources.requests.cpu = "3"
  end
  return {
    requires = kube.accuratePodRequirements(template),
    none = kube.accuratePodRequirements({spec = {}}),
    deps = kube.getPodDependencies(template, obj.metadata.namespace),
    defaultNamespace = kube.getPodDependencies(template, nil)[1].namespace,
    quarter = kube.getResourceQuantity("250m"),
    zero = kube.getResourceQuantity(nil),
    gibi = kube.getResourceQuantity("1Gi"),
    cpu = kube.resourceAdd("100m", "200m", nil),
    memory = kube.resourceAdd("1Gi", "512Mi"),
    nothing = kube.resourceAdd(),
  }
end
"""
KUBE_INPUT: Obj = {
    "metadata": {"namespace": "team"},
    "spec": {"template": {"spec": {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}},
                        "env": [{"valueFrom": {"secretKeyRef": {"name": "s"}}}]}],
        "tolerations": [{"key": "k"}],
    }}},
}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "cpu"), [(False, "1"), (True, "3")], ids=["as-given", "changed"]
)
@asyncio_test
async def test_kube_library(change: bool, cpu: str) -> None:
    obj = copy.deepcopy(KUBE_INPUT)
    obj["spec"]["change"] = change
    status = await lua(KUBE, Operation.INTERPRET_STATUS).reflect_status(obj)
    assert status == {
        "requires": {"nodeClaim": {"tolerations": [{"key": "k"}]}, "resourceRequest": {"cpu": cpu}},
        "deps": [{"apiVersion": "v1", "kind": "Secret", "namespace": "team", "name": "s"}],
        "defaultNamespace": "default",
        "quarter": 0.25,
        "zero": 0,
        "gibi": 1073741824,
        "cpu": "300m",
        "memory": "1536Mi",
        "nothing": "0",
    }
    assert KUBE_INPUT["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "1"
    }


def bad(position: int, function: str, expected: str, got: str) -> str:
    return rf"bad argument #{position} to '{function}' \({expected} expected, got {got}\)"


BAD_CPU = "{spec = {containers = {{resources = {requests = {cpu = 'lots'}}}}}}"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("kube.accuratePodRequirements()", "accuratePodRequirements takes 1 argument"),
        ("kube.accuratePodRequirements('x')", bad(1, "accuratePodRequirements", "table", "string")),
        (f"kube.accuratePodRequirements({BAD_CPU})", "quantity 'lots'"),
        ("kube.getPodDependencies({})", "getPodDependencies takes 2 argument"),
        ("kube.getPodDependencies({}, {})", bad(2, "getPodDependencies", "string", "table")),
        ("kube.getResourceQuantity(5)", bad(1, "getResourceQuantity", "string", "number")),
        ("kube.getResourceQuantity('-1')", "negative quantity"),
        ("kube.resourceAdd('1', 2)", bad(2, "resourceAdd", "string", "number")),
        ("kube.resourceAdd('1x')", "unknown suffix"),
        ("kube.accuratePodRequirements({f = print})", r"argument \.f: a function has no JSON form"),
    ],
)
@asyncio_test
async def test_kube_library_rejects_bad_arguments_at_the_callers_line(
    call: str, message: str
) -> None:
    source = (
        f'local kube = require("kube")\nfunction InterpretHealth(obj)\n  {call}\n  return true\nend'
    )
    with pytest.raises(LuaRuntimeError, match=f"luaScript:3: .*{message}"):
        await lua(source, Operation.INTERPRET_HEALTH).interpret_health({})


def test_a_quantity_string_is_parsed_once_failures_every_time_and_memory_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from controllers.interpreter import types
    from reconcile import Quantity

    parsed: list[Any] = []
    real = Quantity.parse

    def counted(raw: Any) -> Quantity:
        parsed.append(raw)
        return real(raw)

    monkeypatch.setattr(Quantity, "parse", counted)
    monkeypatch.setattr(types, "_parsed", {})
    for _ in range(3):
        requirements = ReplicaRequirements.from_dict({"resourceRequest": {"cpu": "1500m"}})
        assert requirements.resource_request == {"cpu": "1500m"}
        with pytest.raises(ValueError, match="cpu"):
            ReplicaRequirements.from_dict({"resourceRequest": {"cpu": "1.5 cores"}})
    assert parsed == ["1500m"] + ["1.5 cores"] * 3
    assert types.parse_quantity("0.5Gi")[1] == "512Mi"
    assert types.parse_quantity(2)[1] == "2"
    for n in range(types.QUANTITY_CACHE_SIZE + 10):
        types.parse_quantity(f"{n}Mi")
    assert 0 < len(types._parsed) <= types.QUANTITY_CACHE_SIZE


def test_status_items_without_a_cluster_name_are_accepted_as_karmadas_testdata_has_them() -> None:
    parsed = AggregatedStatusItem.from_dict({"applied": True, "status": {"replicas": 1}})
    assert parsed == AggregatedStatusItem("", {"replicas": 1}, applied=True)
    assert parsed.to_dict() == {"clusterName": "", "status": {"replicas": 1}, "applied": True}
