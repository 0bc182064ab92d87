"""The detector's policy fields beyond matching: Lazy activation, dependentOverrides bookkeeping,
and which accepted fields are reported as unsupported (once per generation)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.detector import ObjectRef
from controllers.detector.activation import keeps_binding
from controllers.detector.dependentoverrides import Waiting, dependent_overrides
from controllers.detector.unsupported import UnsupportedFieldReporter, unsupported_fields
from reconcile import GVK, Request

PP_ID = "propagationpolicy.karmada.io/permanent-id"
DEPLOYMENT = GVK("apps", "v1", "Deployment")


def policy(generation: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {
            "name": "p",
            "namespace": "default",
            "uid": "u1",
            "generation": generation,
            "labels": {PP_ID: "id"},
        },
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}], **spec},
    }


def template(version: str) -> dict[str, Any]:
    return {"kind": "Deployment", "metadata": {"name": "web", "resourceVersion": version}}


def binding(built_from: str, claimed: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "web-deployment", "labels": {}, "annotations": {}}
    if claimed:
        metadata["labels"] = {PP_ID: "id"}
        metadata["annotations"] = {
            "propagationpolicy.karmada.io/namespace": "default",
            "propagationpolicy.karmada.io/name": "p",
        }
    return {"metadata": metadata, "spec": {"resource": {"resourceVersion": built_from}}}


@pytest.mark.parametrize(
    ("spec", "existing", "kept"),
    [
        pytest.param({"activationPreference": "Lazy"}, binding("7"), True, id="lazy, unchanged"),
        pytest.param({"activationPreference": "Lazy"}, binding("6"), False, id="template changed"),
        pytest.param({"activationPreference": "Lazy"}, None, False, id="no binding yet"),
        pytest.param(
            {"activationPreference": "Lazy"}, binding("7", claimed=False), False, id="newly claimed"
        ),
        pytest.param({}, binding("7"), False, id="not lazy: applied at once"),
    ],
)
def test_keeps_binding(spec: dict[str, Any], existing: dict[str, Any] | None, kept: bool) -> None:
    assert keeps_binding(policy(**spec), template("7"), existing) is kept


def test_waiting_templates_are_enqueued_by_the_override_they_wait_for() -> None:
    waiting = Waiting()
    web = ObjectRef(DEPLOYMENT, "default", "web")
    waiting.wait(web, dependent_overrides(policy(dependentOverrides=["b", "a", "a"])))
    override = {"metadata": {"name": "a", "namespace": "default"}}
    elsewhere = {"metadata": {"name": "a", "namespace": "other"}}
    assert waiting.requests(override) == [web.request()]
    assert waiting.requests(elsewhere) == []
    waiting.done(web)
    assert waiting.requests(override) == []
    assert isinstance(web.request(), Request)


@pytest.mark.parametrize(
    ("spec", "fields"),
    [
        pytest.param({}, [], id="nothing set"),
        pytest.param({"association": False}, [], id="no-op values"),
        pytest.param({"propagateDeps": True}, [], id="propagateDeps: the distributor's"),
        pytest.param(
            {"schedulePriority": {"priorityClassName": "high"}},
            ["spec.schedulePriority"],
            id="schedulePriority",
        ),
        pytest.param(
            {"placement": {"clusterTolerations": [{"key": "k", "tolerationSeconds": 30}]}},
            [],
            id="tolerationSeconds: the taint manager's",
        ),
        pytest.param(
            {"schedulePriority": {"priorityClassName": "high"}, "association": True},
            ["spec.association", "spec.schedulePriority"],
            id="several, sorted",
        ),
        pytest.param(
            {"failover": {"application": {"decisionConditions": {}}, "cluster": {}}},
            [],
            id="failover: application failover and the taint manager's",
        ),
        pytest.param(
            {"activationPreference": "Lazy", "dependentOverrides": ["a"]},
            [],
            id="implemented fields are not reported",
        ),
    ],
)
def test_unsupported_fields(spec: dict[str, Any], fields: list[str]) -> None:
    assert unsupported_fields(policy(**spec)) == fields


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))


def test_unsupported_fields_are_reported_once_per_generation() -> None:
    recorder = Recorder()
    reporter = UnsupportedFieldReporter(recorder)  # type: ignore[arg-type]
    priority = {"priorityClassName": "high"}
    assert reporter.report(policy(schedulePriority=priority)) == ["spec.schedulePriority"]
    assert reporter.report(policy(schedulePriority=priority)) == [], "same generation"
    assert reporter.report(policy(2, schedulePriority=priority)) == ["spec.schedulePriority"]
    assert (
        recorder.events
        == [
            (
                "Warning",
                "UnsupportedField",
                "spec.schedulePriority is not supported here and is ignored",
            )
        ]
        * 2
    )
