"""An interpreter webhook's JSON patch is applied under kube-apiserver's bounds (#26 item 4): a
copy bomb or an endless patch is a WebhookPatchError, the InterpreterError its callers report
(the binding controller's SyncWorkFailed Event and WorksSynced condition, the status
controller's AggregateStatusFailed Event), not gigabytes built on the event loop."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import orjson
import pytest

from controllers.interpreter import AggregatedStatusItem, InterpreterError
from controllers.interpreter.webhook import InterpreterWebhook, WebhookBackend, WebhookPatchError
from reconcile.jsonpatch import MAX_OPERATIONS

CONFIGURATION: dict[str, Any] = {
    "apiVersion": "config.karmada.io/v1alpha1",
    "kind": "ResourceInterpreterWebhookConfiguration",
    "metadata": {"name": "hostile"},
    "webhooks": [
        {
            "name": "hook",
            "clientConfig": {"url": "https://127.0.0.1:1/interpret"},
            "rules": [
                {"operations": ["*"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                 "kinds": ["Deployment"]}
            ],
            "interpreterContextVersions": ["v1alpha1"],
        }
    ],
}  # fmt: skip
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "x" * 24}},
    "spec": {"replicas": 3},
}
# The labels copied once under /spec/x, then /spec/x doubled 22 times: 150 MB from 1.4 KB.
COPY_BOMB: list[dict[str, Any]] = [
    {"op": "add", "path": "/spec/x", "value": []},
    {"op": "copy", "from": "/metadata/labels", "path": "/spec/x/-"},
    *[{"op": "copy", "from": "/spec/x", "path": "/spec/x/-"}] * 22,
]
pytestmark = pytest.mark.asyncio(loop_scope="session")
ENDLESS = [{"op": "test", "path": "/spec/replicas", "value": 3}] * (MAX_OPERATIONS + 1)


class PatchingBackend(WebhookBackend):
    """A WebhookBackend whose webhook answers every request with ``patch``."""

    patch: ClassVar[list[dict[str, Any]]] = []

    async def _post(self, hook: InterpreterWebhook, request: bytes) -> bytes:
        uid = orjson.loads(request)["request"]["uid"]
        encoded = base64.b64encode(orjson.dumps(self.patch)).decode()
        response = {"uid": uid, "successful": True, "patchType": "JSONPatch", "patch": encoded}
        return orjson.dumps(
            {
                "apiVersion": "config.karmada.io/v1alpha1",
                "kind": "ResourceInterpreterContext",
                "response": response,
            }
        )


CALLS: dict[str, Callable[[WebhookBackend], Awaitable[Any]]] = {
    "ReviseReplica": lambda backend: backend.revise_replica(dict(DEPLOYMENT), 2),
    "Retain": lambda backend: backend.retain(dict(DEPLOYMENT), dict(DEPLOYMENT)),
    "AggregateStatus": lambda backend: backend.aggregate_status(
        dict(DEPLOYMENT), [AggregatedStatusItem("m1", {"replicas": 1})]
    ),
}


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        pytest.param(COPY_BOMB, "accumulated copy size limit", id="copy-bomb"),
        pytest.param(ENDLESS, "10001 operations, more than 10000", id="too-many-operations"),
    ],
)
@pytest.mark.parametrize("operation", sorted(CALLS))
async def test_a_patch_past_the_apiservers_bounds_is_a_failed_interpretation(
    operation: str, patch: list[dict[str, Any]], message: str
) -> None:
    backend = PatchingBackend([CONFIGURATION])
    PatchingBackend.patch = patch
    try:
        with pytest.raises(WebhookPatchError, match=message) as refused:
            await CALLS[operation](backend)
    finally:
        await backend.aclose()
    assert isinstance(refused.value, InterpreterError)
    assert "hostile/hook" in str(refused.value)


async def test_a_patch_within_the_bounds_still_applies() -> None:
    backend = PatchingBackend([CONFIGURATION])
    PatchingBackend.patch = COPY_BOMB[:6]  # 2**4 copies of the labels
    try:
        revised = await backend.revise_replica(dict(DEPLOYMENT), 2)
    finally:
        await backend.aclose()
    assert len(orjson.dumps(revised["spec"]["x"])) > 16 * 24
