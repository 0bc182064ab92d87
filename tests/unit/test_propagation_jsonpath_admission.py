"""The admission webhook refuses a state preservation jsonPath that does not parse or is too long,
and the CRDs bound its length by the same number."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api import crd_paths
from controllers.eviction.jsonpath import MAX_TEMPLATE_LENGTH
from controllers.webhook.propagation import default_propagation_policy, propagation_policy_problems


def _policy(kind: str, failover: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "p"}
    if kind == "PropagationPolicy":
        metadata["namespace"] = "team"
    policy = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": kind,
        "metadata": metadata,
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "propagateDeps": True,
            "failover": failover,
        },
    }
    default_propagation_policy(policy, creating=True, new_id=lambda: "id")
    return policy


def _rules(*paths: str) -> dict[str, Any]:
    return {"rules": [{"aliasLabelName": f"x{n}", "jsonPath": p} for n, p in enumerate(paths)]}


def _failover(application: list[str], cluster: list[str]) -> dict[str, Any]:
    return {
        "application": {
            "decisionConditions": {"tolerationSeconds": 10},
            "purgeMode": "Immediately",
            "statePreservation": _rules(*application),
        },
        "cluster": {"purgeMode": "Directly", "statePreservation": _rules(*cluster)},
    }


@pytest.mark.parametrize("kind", ["PropagationPolicy", "ClusterPropagationPolicy"])
def test_valid_templates_are_admitted(kind: str) -> None:
    good = ["{.jobStatus.jobID}", '{.conditions[?(@.type == "Ready")].status}']
    assert propagation_policy_problems(_policy(kind, _failover(good, good))) == []


@pytest.mark.parametrize("kind", ["PropagationPolicy", "ClusterPropagationPolicy"])
def test_a_template_that_does_not_parse_or_is_too_long_is_refused(kind: str) -> None:
    hostile = "{[?(@" + " " * 500 + "==" + " " * 500 + "x]}"
    long = "{.a}" + "x" * MAX_TEMPLATE_LENGTH
    problems = propagation_policy_problems(
        _policy(kind, _failover(["{.ok}", hostile], ["{.a", long]))
    )
    assert len(problems) == 3
    application, unclosed, too_long = problems
    assert application.startswith(
        "spec.failover.application.statePreservation.rules[1].jsonPath: Invalid value: "
    )
    assert application.endswith(
        "is not a valid JSONPath template: unrecognized filter " + hostile[1:-1]
    )
    assert unclosed == (
        'spec.failover.cluster.statePreservation.rules[0].jsonPath: Invalid value: "{.a": '
        "is not a valid JSONPath template: unclosed action in '{.a'"
    )
    assert too_long.startswith("spec.failover.cluster.statePreservation.rules[1].jsonPath: ")
    assert too_long.endswith(f"must be no more than {MAX_TEMPLATE_LENGTH} characters")


def _json_path_schemas(crd: dict[str, Any]) -> list[dict[str, Any]]:
    (version,) = crd["spec"]["versions"]
    failover = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["failover"]
    return [
        failover["properties"][kind]["properties"]["statePreservation"]["properties"]["rules"][
            "items"
        ]["properties"]["jsonPath"]
        for kind in ("application", "cluster")
    ]


@pytest.mark.parametrize("plural", ["propagationpolicies", "clusterpropagationpolicies"])
def test_the_crds_bound_the_length_as_the_controller_does(plural: str) -> None:
    (path,) = [p for p in crd_paths() if p.name == f"policy.karmada.io_{plural}.yaml"]
    crd = yaml.safe_load(Path(path).read_text())
    assert [s.get("maxLength") for s in _json_path_schemas(crd)] == [MAX_TEMPLATE_LENGTH] * 2
