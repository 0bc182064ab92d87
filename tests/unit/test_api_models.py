"""reconcile.api's bridge to kubernetes-asyncio's models: its objects to our dicts and back."""

from __future__ import annotations

import datetime

import pytest
from kubernetes_asyncio.client import (
    V1ConfigMap,
    V1Deployment,
    V1DeploymentSpec,
    V1LabelSelector,
    V1ObjectMeta,
    V1PodTemplateSpec,
)

from reconcile.api import from_model, to_model


def _deployment() -> V1Deployment:
    return V1Deployment(
        api_version="apps/v1",
        kind="Deployment",
        metadata=V1ObjectMeta(name="web", namespace="prod", owner_references=None),
        spec=V1DeploymentSpec(
            replicas=2,
            selector=V1LabelSelector(match_labels={"app": "web"}),
            template=V1PodTemplateSpec(),
        ),
    )


def test_a_model_becomes_the_apis_camel_case_dict_without_unset_fields() -> None:
    assert from_model(_deployment()) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {}},
    }


def test_a_dict_becomes_the_named_model_and_round_trips() -> None:
    model = to_model(from_model(_deployment()), "V1Deployment")
    assert isinstance(model, V1Deployment)
    assert model.spec.selector.match_labels == {"app": "web"}
    assert model == _deployment()


def test_times_are_parsed_into_the_model_and_written_back_as_strings() -> None:
    model = to_model({"metadata": {"creationTimestamp": "2024-01-02T03:04:05Z"}}, "V1ConfigMap")
    assert isinstance(model, V1ConfigMap)
    created = model.metadata.creation_timestamp
    assert created == datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    assert from_model(model) == {"metadata": {"creationTimestamp": "2024-01-02T03:04:05+00:00"}}


def test_an_unknown_model_name_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no model 'V1Deploymnet'"):
        to_model({}, "V1Deploymnet")


def test_something_that_is_no_model_is_refused() -> None:
    with pytest.raises(TypeError, match="not a kubernetes-asyncio model: dict"):
        from_model({"kind": "Deployment"})
