"""Admission handling without a server: reviews decoded, patches computed, errors turned into
denials, the typed defaulter and validator called per operation, controller-runtime's paths."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import orjson
import pytest

from reconcile import GVK, Forbidden, Invalid, apply_json_patch
from reconcile.jsonpatch import create_json_patch
from reconcile.objects import Obj
from reconcile.webhook import (
    AdmissionError,
    AdmissionRequest,
    AdmissionResponse,
    DefaulterHandler,
    ReviewError,
    ValidatorHandler,
    Webhook,
    current_request,
    mutate_path,
    patched,
    validate_path,
)

asyncio_test = pytest.mark.asyncio(loop_scope="session")

WIDGET = GVK("example.com", "v1", "Widget")


def review(operation: str = "CREATE", obj: Obj | None = None, old: Obj | None = None) -> Obj:
    """An AdmissionReview as the apiserver sends it, for a Widget."""
    request: Obj = {
        "uid": "0f0e",
        "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
        "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
        "operation": operation,
        "name": "w",
        "namespace": "ns",
        "userInfo": {"username": "alice"},
        "object": obj,
        "oldObject": old,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def widget(**spec: Any) -> Obj:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
    }


def test_a_review_decodes_into_a_request() -> None:
    request = AdmissionRequest.from_review(review("UPDATE", widget(size=2), widget(size=1)))
    assert (request.uid, request.operation, request.kind) == ("0f0e", "UPDATE", WIDGET)
    assert request.object == widget(size=2)
    assert request.old_object == widget(size=1)
    assert request.user_info["username"] == "alice"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param([], "not a JSON object", id="a list"),
        pytest.param({"kind": "Pod"}, "want 'AdmissionReview'", id="another kind"),
        pytest.param(
            {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1"},
            "want 'admission.k8s.io/v1'",
            id="v1beta1",
        ),
        pytest.param(
            {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"},
            "no request",
            id="no request",
        ),
        pytest.param(
            {**review(), "request": {**review()["request"], "operation": "PATCH"}},
            "request.operation",
            id="unknown operation",
        ),
        pytest.param(
            {**review(), "request": {**review()["request"], "uid": ""}},
            "request.uid",
            id="no uid",
        ),
    ],
)
def test_a_malformed_review_is_a_clear_error(body: Any, message: str) -> None:
    with pytest.raises(ReviewError, match=message):
        AdmissionRequest.from_review(body)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param({"a": 1}, {"a": 1}, id="equal"),
        pytest.param({"a": 1}, {"a": 1, "b/c~d": {"e": [1]}}, id="added key needing escapes"),
        pytest.param({"a": 1, "b": 2}, {"b": 3}, id="removed and replaced"),
        pytest.param({"l": [1, {"x": 1}]}, {"l": [1, {"x": 2}]}, id="list element changed"),
        pytest.param({"l": [1, 2]}, {"l": [1, 2, 3]}, id="list grew"),
        pytest.param({"v": True}, {"v": 1}, id="true is not 1"),
    ],
)
def test_a_computed_patch_turns_the_original_into_the_mutated(before: Obj, after: Obj) -> None:
    patch = create_json_patch(before, after)
    assert apply_json_patch(before, patch) == after
    assert (patch == []) == (orjson.dumps(before) == orjson.dumps(after))  # JSON's equality


def test_a_patched_response_carries_the_patch_base64_encoded() -> None:
    answer = patched(widget(), widget(size=3)).to_review("u")["response"]
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"
    operations = orjson.loads(base64.b64decode(answer["patch"]))
    assert operations == [{"op": "add", "path": "/spec/size", "value": 3}]


class Raises:
    def __init__(self, error: Exception) -> None:
        self.error = error

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        raise self.error


@asyncio_test
@pytest.mark.parametrize(
    ("error", "code", "message", "warnings"),
    [
        pytest.param(RuntimeError("boom"), 403, "boom", (), id="any exception"),
        pytest.param(
            AdmissionError("too big", code=422, reason="Invalid", warnings=("w",)),
            422,
            "too big",
            ("w",),
            id="AdmissionError",
        ),
        pytest.param(
            Invalid({"code": 422, "reason": "Invalid", "message": "spec.size: bad"}),
            422,
            "spec.size: bad",
            (),
            id="ApiError",
        ),
        pytest.param(Forbidden({"code": 403, "message": "no"}), 403, "no", (), id="Forbidden"),
    ],
)
async def test_a_raising_handler_denies_with_its_message(
    error: Exception, code: int, message: str, warnings: tuple[str, ...]
) -> None:
    request = AdmissionRequest.from_review(review(obj=widget()))
    answer = await Webhook(Raises(error)).review(request)
    assert (answer.allowed, answer.code, answer.message, answer.warnings) == (
        False,
        code,
        message,
        warnings,
    )


class SizeDefaulter:
    seen: AdmissionRequest | None = None

    async def default(self, obj: Obj) -> None:
        self.seen = current_request()
        obj["spec"].setdefault("size", 1)


@asyncio_test
async def test_the_defaulter_answers_with_the_patch_and_sees_the_request() -> None:
    defaulter = SizeDefaulter()
    webhook = Webhook(DefaulterHandler(WIDGET, defaulter))
    request = AdmissionRequest.from_review(review(obj=widget()))
    answer = await webhook.review(request)
    assert answer.allowed
    assert apply_json_patch(widget(), list(answer.patch)) == widget(size=1)
    assert defaulter.seen is request
    assert current_request() is None


@asyncio_test
async def test_the_defaulter_skips_delete_and_refuses_another_kind() -> None:
    handler = DefaulterHandler(WIDGET, SizeDefaulter())
    deletion = await handler.handle(AdmissionRequest.from_review(review("DELETE", old=widget())))
    assert deletion.allowed
    assert not deletion.patch
    other = review(obj=widget())
    other["request"]["kind"]["version"] = "v1alpha1"
    refusal = await handler.handle(AdmissionRequest.from_review(other))
    assert (refusal.allowed, refusal.code) == (False, 400)
    assert "serves example.com/v1, Kind=Widget" in refusal.message


class SizeValidator:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def validate_create(self, obj: Obj) -> Sequence[str] | None:
        self.calls.append("create")
        if obj["spec"].get("size", 0) > 10:
            raise ValueError("spec.size must be at most 10")
        return ["size is not set"] if "size" not in obj["spec"] else None

    async def validate_update(self, old: Obj, new: Obj) -> Sequence[str] | None:
        self.calls.append("update")
        return None

    async def validate_delete(self, obj: Obj) -> Sequence[str] | None:
        self.calls.append("delete")
        return None


@asyncio_test
async def test_the_validator_is_called_per_operation_with_warnings() -> None:
    validator = SizeValidator()
    webhook = Webhook(ValidatorHandler(WIDGET, validator))
    created = await webhook.review(AdmissionRequest.from_review(review(obj=widget())))
    assert created.allowed
    assert created.warnings == ("size is not set",)
    refused = await webhook.review(AdmissionRequest.from_review(review(obj=widget(size=11))))
    assert (refused.allowed, refused.code, refused.message) == (
        False,
        403,
        "spec.size must be at most 10",
    )
    await webhook.review(AdmissionRequest.from_review(review("UPDATE", widget(), widget())))
    await webhook.review(AdmissionRequest.from_review(review("DELETE", old=widget())))
    assert validator.calls == ["create", "create", "update", "delete"]


def test_paths_are_controller_runtimes() -> None:
    assert mutate_path(GVK("batch.tutorial.kubebuilder.io", "v1", "CronJob")) == (
        "/mutate-batch-tutorial-kubebuilder-io-v1-cronjob"
    )
    assert validate_path(GVK("", "v1", "Pod")) == "/validate--v1-pod"
