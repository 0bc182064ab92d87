"""shape_problems names every field whose JSON type differs from the TypedDicts' declaration."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import ClusterSpec, ClusterStatus, PropagationSpec, shape_problems
from tests.fuzz.strategies import crd_schema

WELL_FORMED: dict[str, Any] = {
    "resourceSelectors": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {}}}
    ],
    "placement": {
        "clusterAffinity": {"clusterNames": ["member1"]},
        "clusterTolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 3}],
        "replicaScheduling": {"replicaSchedulingType": "Divided"},
    },
    "priority": 3,
    "failover": {"anything": [1, "goes"]},
    "unknownField": 5,
    "suspension": None,
}


def test_a_well_formed_spec_has_no_problems() -> None:
    assert shape_problems(WELL_FORMED, PropagationSpec, "spec") == []
    assert shape_problems(None, PropagationSpec, "spec") == [], "null is absent"


MALFORMED = [
    (5, 'spec: Invalid value: "integer": must be of type object'),
    ({"resourceSelectors": "x"}, 'spec.resourceSelectors: Invalid value: "string": must be of '
     "type array"),
    ({"resourceSelectors": [None]}, 'spec.resourceSelectors[0]: Invalid value: "null": must be '
     "of type object"),
    ({"priority": True}, 'spec.priority: Invalid value: "boolean": must be of type integer'),
    ({"priority": 1.5}, 'spec.priority: Invalid value: "number": must be of type integer'),
    ({"placement": {"clusterAffinity": {"labelSelector": {"matchLabels": {"a": 1}}}}},
     'spec.placement.clusterAffinity.labelSelector.matchLabels[a]: Invalid value: "integer": '
     "must be of type string"),
    ({"preemption": "Sometimes"}, "spec.preemption: Unsupported value: 'Sometimes': supported "
     'values: "Always", "Never"'),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "expected"), MALFORMED)
def test_each_wrong_field_is_named(spec: Any, expected: str) -> None:
    assert shape_problems(spec, PropagationSpec, "spec") == [expected]


def test_unions_accept_any_arm() -> None:
    summary = {"resourceSummary": {"allocatable": {"cpu": "2", "pods": 110}}}
    assert shape_problems(summary, dict[str, Any], "status") == []
    assert shape_problems(summary, ClusterStatus, "status") == []
    (problem,) = shape_problems(
        {"resourceSummary": {"allocatable": {"cpu": []}}}, ClusterStatus, "s"
    )
    assert problem.endswith("must be of type string or integer")


def _enums(schema: dict[str, Any], path: str) -> dict[str, list[str]]:
    found = {path: schema["enum"]} if "enum" in schema else {}
    for key, child in (schema.get("properties") or {}).items():
        found |= _enums(child, f"{path}.{key}")
    if "items" in schema:
        found |= _enums(schema["items"], f"{path}[0]")
    return found


@pytest.mark.parametrize(
    ("crd", "hint"),
    [
        ("policy.karmada.io_propagationpolicies.yaml", PropagationSpec),
        ("cluster.karmada.io_clusters.yaml", ClusterSpec),
    ],
)
def test_every_crd_enum_value_is_accepted(crd: str, hint: Any) -> None:
    # The Literal types must allow what the CRD's enums allow, or valid objects would be refused.
    enums = _enums(crd_schema(crd, "spec"), "spec")
    assert enums
    for path, values in enums.items():
        keys = path.removeprefix("spec.").replace("[0]", ".[]").split(".")
        for value in values:
            assert shape_problems(_nested(keys, value), hint, "spec") == [], (path, value)


def _nested(keys: list[str], value: Any) -> Any:
    for key in reversed(keys):
        value = [value] if key == "[]" else {key: value}
    return value
