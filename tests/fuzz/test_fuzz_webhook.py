"""Fuzz the interpreter webhook client with malformed replies: a result or an InterpreterError.

A ResourceInterpreterWebhook is a server someone else runs; whatever body it answers with (not
JSON, the wrong kind, another uid, replicas of the wrong type, a patch that is not base64 JSON or
does not apply, a raw status that is not an object), every operation of ``WebhookBackend`` must
return a valid result or raise an ``InterpreterError`` subclass. The transport is replaced by one
that answers the generated body to the request it was given, so no server is needed.

Patches include chains of ``copy`` operations, each of which may double the object (#26 item 4):
applied with any copy bound, they give a result within it or a ``JsonPatchError``, never more.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from controllers.interpreter import AggregatedStatusItem, InterpreterError, ReplicaRequirements
from controllers.interpreter.webhook import InterpreterWebhook, WebhookBackend
from reconcile.jsonpatch import MAX_COPY_BYTES, JsonPatchError, apply_json_patch
from tests.fuzz.strategies import MALFORMED, fuzz_settings, json_values, mostly, nasty_text, within

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGURATION: dict[str, Any] = {
    "apiVersion": "config.karmada.io/v1alpha1",
    "kind": "ResourceInterpreterWebhookConfiguration",
    "metadata": {"name": "fuzz"},
    "webhooks": [
        {
            "name": "hook",
            "clientConfig": {"url": "https://127.0.0.1:1/interpret"},
            "rules": [
                {"operations": ["*"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                 "kinds": ["Deployment"]}
            ],
            "interpreterContextVersions": ["v1alpha1"],
            "timeoutSeconds": 3,
        }
    ],
}  # fmt: skip
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "web"}]}}},
}


def _patch(operations: Any) -> str:
    return base64.b64encode(json.dumps(operations).encode()).decode()


_POINTERS = ["/spec/replicas", "/metadata/labels", "", "/a/b", "/spec/-", "/spec", "/spec/x",
             "/spec/x/-", "/spec/template", "/metadata/labels/copy"]  # fmt: skip
single = st.fixed_dictionaries(
    {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "x"]),
     "path": st.sampled_from(_POINTERS),
     "value": json_values},
    optional={"from": st.sampled_from(_POINTERS)},
)  # fmt: skip
# A list under /spec/x, then copies of the object's parts into it and of it into itself: each
# copy of /spec/x doubles it.
copy_chains = st.lists(
    st.fixed_dictionaries(
        {"op": st.just("copy"),
         "from": st.sampled_from(["/spec/x", "/spec/x", "/spec", "/metadata", ""]),
         "path": st.sampled_from(["/spec/x/-"] * 4 + ["/spec/x/0", "/metadata/copy"])},
    ),
    max_size=40,
).map(lambda chain: [{"op": "add", "path": "/spec/x", "value": []}, *chain])  # fmt: skip
operations = st.one_of(st.lists(single, max_size=3), copy_chains)
field_values: dict[str, st.SearchStrategy[Any]] = {
    "successful": mostly(st.just(True), st.one_of(st.just(False), MALFORMED)),
    "status": st.one_of(
        st.fixed_dictionaries({"code": st.integers(-1, 600), "message": nasty_text}), MALFORMED
    ),
    "replicas": mostly(st.integers(-2, 2**31), MALFORMED),
    "replicaRequirements": st.one_of(
        st.fixed_dictionaries({"resourceRequest": st.dictionaries(nasty_text, nasty_text)}),
        MALFORMED,
    ),
    "patchType": mostly(st.just("JSONPatch"), MALFORMED),
    "patch": st.one_of(operations.map(_patch), st.just(_patch({"op": "add"})), MALFORMED),
    "rawStatus": st.one_of(json_values, MALFORMED),
    "healthy": mostly(st.booleans(), MALFORMED),
    "dependencies": st.one_of(st.lists(json_values, max_size=2), MALFORMED),
    "components": st.one_of(st.lists(json_values, max_size=2), MALFORMED),
}
responses = st.fixed_dictionaries(
    {"successful": field_values["successful"]},
    optional={k: v for k, v in field_values.items() if k != "successful"},
)
bodies = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(["config.karmada.io/v1alpha1"] * 9 + ["v1"]),
        "kind": st.sampled_from(["ResourceInterpreterContext"] * 9 + ["Status"]),
        "response": mostly(responses, MALFORMED),
        "uid": st.sampled_from(["same"] * 9 + ["other"]),
    }
)
raw_bodies = st.one_of(
    st.sampled_from([b"", b"null", b"[]", b"{", b"\xff\xfe", b'{"response": 1}', b"1e999"]),
    st.binary(max_size=40),
)


class ScriptedBackend(WebhookBackend):
    """A WebhookBackend whose transport answers ``body`` (the uid filled in from the request)."""

    body: Any = None

    async def _post(self, hook: InterpreterWebhook, request: bytes) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        body = dict(self.body)
        uid = orjson.loads(request)["request"]["uid"] if body.pop("uid") == "same" else "x"
        if isinstance(body.get("response"), dict):
            body["response"] = {"uid": uid, **body["response"]}
        # Python's encoder writes what a hostile server may: NaN, 10**30, any key.
        return json.dumps(body).encode()


OPERATIONS = [
    "get_replicas", "revise_replica", "retain", "aggregate_status", "reflect_status",
    "interpret_health", "get_dependencies", "get_components",
]  # fmt: skip


async def _call(backend: WebhookBackend, operation: str) -> Any:
    obj = dict(DEPLOYMENT)
    if operation == "revise_replica":
        return await backend.revise_replica(obj, 2)
    if operation == "retain":
        return await backend.retain(obj, dict(DEPLOYMENT))
    if operation == "aggregate_status":
        return await backend.aggregate_status(obj, [AggregatedStatusItem("m1", {"replicas": 1})])
    return await getattr(backend, operation)(obj)


async def _outcome(body: Any, operation: str) -> Any:
    backend = ScriptedBackend([CONFIGURATION])
    backend.body = body
    try:
        with within(5), anyio.fail_after(4):
            return await _call(backend, operation)
    except InterpreterError as error:
        return error
    finally:
        await backend.aclose()


@fuzz_settings(max_examples=150)
@given(body=st.one_of(bodies, bodies, bodies, raw_bodies), operation=st.sampled_from(OPERATIONS))
async def test_every_reply_gives_a_result_or_an_interpreter_error(
    body: Any, operation: str
) -> None:
    outcome = await _outcome(body, operation)
    event(type(outcome).__name__)
    if isinstance(outcome, InterpreterError):
        assert str(outcome)
    elif operation == "get_replicas":
        replicas, requirements = outcome
        assert isinstance(replicas, int)
        assert 0 <= replicas < 2**31
        assert requirements is None or isinstance(requirements, ReplicaRequirements)
    elif operation == "interpret_health":
        assert isinstance(outcome, bool)
    elif operation in ("get_dependencies", "get_components"):
        assert isinstance(outcome, list)
    elif operation != "reflect_status":
        assert isinstance(outcome, dict)


def _size(value: Any) -> int:
    return len(json.dumps(value))  # not orjson: the values hold integers past 64 bits


@fuzz_settings(max_examples=300)
@given(
    patch=st.one_of(copy_chains, st.lists(single, max_size=6)),
    limit=st.sampled_from([0, 100, 4096, 65_536, 1_000_000, MAX_COPY_BYTES]),
)
async def test_copies_stay_within_the_bound_or_raise_a_patch_error(
    patch: list[dict[str, Any]], limit: int
) -> None:
    with within(5):
        try:
            patched = apply_json_patch(DEPLOYMENT, patch, max_copy_bytes=limit)
        except JsonPatchError:
            event("JsonPatchError")
            return
    event("applied")
    # The copies add at most ``limit`` bytes as the library counts them (characters, escapes
    # aside: up to 6 bytes each once encoded); everything else came in with the patch.
    assert _size(patched) <= _size(DEPLOYMENT) + _size(patch) + 6 * limit
