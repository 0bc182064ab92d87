"""Fuzz Lua customizations: scripts from a small grammar give a valid result or an InterpreterError.

A ResourceInterpreterCustomization's scripts are users' code. Scripts are composed from pieces
(bounded loops, string and table building, pcall/xpcall, errors, forbidden globals, kube helpers
with bad arguments, syntax errors) and a return of any type, and run through the public
``CustomizationSet`` on a Deployment: loading either succeeds or raises an InterpreterError
subclass, and so does every call. The scripts stay cheap; the hostile probes of issue #10 are the
sandbox's own regression tests. ``apply`` may become async (Lua moves to worker processes), so
both forms are accepted.
"""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from controllers.interpreter import CustomizationSet, InterpreterError, ReplicaRequirements
from tests.fuzz.strategies import fuzz_settings, within

pytestmark = pytest.mark.asyncio(loop_scope="session")

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 3,
        "template": {
            "spec": {"containers": [{"name": "web", "resources": {"requests": {"cpu": "100m"}}}]}
        },
    },
    "status": {"readyReplicas": 3},
}

bounds = st.sampled_from(["0", "1", "3", "50", "-1"])
arguments = st.sampled_from(
    [
        "nil",
        "1",
        "'x'",
        "{}",
        "obj",
        "obj.spec",
        "string.rep('1', 300)",
        "{{}}",
        "true",
        "0/0",
        "string.rep('1', 5000)",
    ]
)
pieces = st.one_of(
    bounds.map(lambda k: f"local n = 0 for i = 1, {k} do n = n + i end"),
    bounds.map(lambda k: f"local s = string.rep('ab', {k}) .. tostring(n)"),
    bounds.map(lambda k: f"local t = {{}} for i = 1, {k} do t[i] = {{i, tostring(i)}} end"),
    st.sampled_from(
        [
            "local ok, e = pcall(function() error('x') end)",
            "local ok, e = pcall(error, {code = 1})",
            "local ok = xpcall(function() return nil + 1 end, function(m) return m end)",
            "local u = string.upper(tostring(obj.metadata.name)) .. string.format('%d', 3)",
            "local m = string.match('abc', '(%a+)')",
            "local g = string.gsub('aaa', 'a', 'b')",
            "local r = table.concat({'a', 'b'}, ',')",
            "table.insert(t or {}, 1)",
            "obj.spec.replicas = (obj.spec.replicas or 0) + 1",
            "obj.spec = nil",
            "error('deliberate')",
            "error(nil)",
            "error({})",
            "os.exit(1)",
            "io.open('/etc/passwd')",
            "require('os')",
            "load('return 1')()",
            "dofile('/etc/passwd')",
            "debug.getinfo(1)",
            "setmetatable({}, {__index = function() return 1 end})",
            "collectgarbage()",
            "end",
            "local = 5",
            "((",
        ]
    ),
    st.builds(
        lambda helper, arg: f"local k = kube.{helper}({arg})",
        st.sampled_from(
            ["accuratePodRequirements", "getPodDependencies", "getResourceQuantity", "resourceAdd"]
        ),
        arguments,
    ),
)
returns = st.sampled_from(
    [
        "obj.spec.replicas", "nil", "'3'", "-1", "2^31", "1/0", "0/0", "{}", "true", "obj",
        "obj.spec.replicas, {}", "3, 'x'", "3, {resourceRequest = {cpu = 5}}",
        "3, {resourceRequest = {cpu = '100m'}}", "obj.status.readyReplicas == 3", "'yes'",
        "{obj}", "3.5", "n", "s", "t",
    ]
)  # fmt: skip
FUNCTIONS = {
    "replicaResource": ("GetReplicas", "obj"),
    "healthInterpretation": ("InterpretHealth", "obj"),
    "replicaRevision": ("ReviseReplica", "obj, desired"),
    "statusReflection": ("ReflectStatus", "obj"),
}
scripts = st.builds(
    lambda field, top, body, ret: (field, _script(field, top, body, ret)),
    st.sampled_from(sorted(FUNCTIONS)),
    st.lists(pieces, max_size=1),
    st.lists(pieces, max_size=4),
    returns,
)


def _script(field: str, top: list[str], body: list[str], ret: str) -> str:
    name, parameters = FUNCTIONS[field]
    lines = [*top, "local kube = require('kube')", f"function {name}({parameters})",
             "  local n, s, t = 0, '', {}", *body]  # fmt: skip
    return "\n".join([*lines, f"  return {ret}", "end"])


def _customization(field: str, script: str) -> dict[str, Any]:
    return {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": "fuzz"},
        "spec": {
            "target": {"apiVersion": "apps/v1", "kind": "Deployment"},
            "customizations": {field: {"luaScript": script}},
        },
    }


async def _run(customizations: CustomizationSet, field: str) -> Any:
    obj = {**DEPLOYMENT}
    if field == "replicaResource":
        return await customizations.get_replicas(obj)
    if field == "healthInterpretation":
        return await customizations.interpret_health(obj)
    if field == "replicaRevision":
        return await customizations.revise_replica(obj, 2)
    return await customizations.reflect_status(obj)


async def _outcome(field: str, script: str) -> Any:
    customizations = CustomizationSet(timeout=1.0)
    try:
        with within(10), anyio.fail_after(8):
            loaded = customizations.apply(_customization(field, script))
            if inspect.isawaitable(loaded):
                await loaded
            return await _run(customizations, field)
    except InterpreterError as error:
        return error


@fuzz_settings(max_examples=100)
@given(case=scripts)
async def test_a_script_gives_a_valid_result_or_an_interpreter_error(case: tuple[str, str]) -> None:
    field, script = case
    outcome = await _outcome(field, script)
    event(type(outcome).__name__)
    if isinstance(outcome, InterpreterError):
        assert str(outcome)
    elif field == "replicaResource":
        replicas, requirements = outcome
        assert isinstance(replicas, int)
        assert replicas >= 0
        assert requirements is None or isinstance(requirements, ReplicaRequirements)
    elif field == "healthInterpretation":
        assert isinstance(outcome, bool)
    elif field == "replicaRevision":
        assert isinstance(outcome, dict)
    else:
        assert outcome is None or isinstance(outcome, dict)


# The issue's own probe (point 5): a kube helper given a 5,000-digit number raised Python's
# ValueError (int()'s digit limit) out of the call instead of a LuaError.
@pytest.mark.parametrize("helper", ["resourceAdd", "getResourceQuantity"])
async def test_a_huge_number_in_a_kube_helper_is_an_interpreter_error(helper: str) -> None:
    script = _script(
        "replicaResource", [], [f"local k = kube.{helper}(string.rep('1', 5000))"], "1"
    )
    assert isinstance(await _outcome("replicaResource", script), InterpreterError)
