"""Fuzz the override manager with malformed OverridePolicies: applied or an OverrideError.

(Cluster)OverridePolicies are users' input and their overriders carry free-form values (plaintext
values, JSON pointers, images, YAML documents). ``apply_overrides`` must return the overridden
manifest or raise ``OverrideError`` naming the policy and rule, which the binding controller turns
into a condition on the binding, and never change the caller's manifest; a manifest that comes
out has the template's apiVersion, kind, namespace and name.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from controllers.api import identity_of
from controllers.binding import OverrideError, OverrideResult, apply_overrides
from tests.fuzz.strategies import (
    crd_schema,
    deep,
    from_schema,
    fuzz_settings,
    json_values,
    label_maps,
    nasty_text,
    within,
)

POLICIES = "policy.karmada.io_overridepolicies.yaml"

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {
        "replicas": 3,
        "template": {
            "metadata": {"annotations": {"config": '{"a": [1, 2]}', "yaml": "a: [1, 2]\n"}},
            "spec": {
                "containers": [
                    {"name": "web", "image": "nginx:1.25", "command": ["nginx"], "args": ["-g"]},
                    {"name": "side", "image": "registry:5000/app@sha256:" + "a" * 64},
                ]
            },
        },
    },
}

MEMBER: dict[str, Any] = {
    "metadata": {"name": "member1", "labels": {"region": "eu"}},
    "spec": {"provider": "aws", "region": "eu-west-1", "zones": ["a", "b"]},
}

# Paths and values the overriders are most likely to trip over.
pointers = st.one_of(
    st.sampled_from(
        [
            "/spec/replicas", "/spec/template/spec/containers/0/image", "/metadata/labels/app",
            "/spec/extra", "/metadata/annotations/x", "/spec/template/spec/containers/1/args/-",
            "/spec/template/metadata/annotations/config",
            "/spec/template/metadata/annotations/yaml",
            "/spec/template/spec/containers/-", "/spec/template/spec/containers/9", "/metadata",
            "", "/", "spec", "/spec//x", "/a~2b", "/spec/template/spec/containers/01", "/~1",
            "/kind", "/apiVersion", "/metadata/namespace", "/metadata/name", "/metadata/na~1me",
        ]
    ),
    nasty_text,
)  # fmt: skip
values = st.one_of(json_values, st.sampled_from([50, 400, 1000]).map(deep))
operators = st.one_of(st.sampled_from(["add", "remove", "replace"]), nasty_text)
patch_operations = st.lists(
    st.fixed_dictionaries({"subPath": pointers, "operator": operators, "value": values}),
    max_size=3,
)
overriders = st.fixed_dictionaries(
    {},
    optional={
        "plaintext": st.lists(
            st.fixed_dictionaries({"path": pointers, "operator": operators, "value": values}),
            max_size=3,
        ),
        "imageOverrider": st.lists(
            st.fixed_dictionaries(
                {
                    "component": st.one_of(
                        st.sampled_from(["Registry", "Repository", "Tag"]), nasty_text
                    ),
                    "operator": operators,
                    "value": nasty_text,
                },
                optional={"predicate": st.fixed_dictionaries({"path": pointers})},
            ),
            max_size=2,
        ),
        "commandOverrider": st.lists(
            st.fixed_dictionaries(
                {
                    "containerName": st.sampled_from(["web", "side", "none"]),
                    "operator": operators,
                    "value": st.lists(nasty_text, max_size=3),
                }
            ),
            max_size=2,
        ),
        "labelsOverrider": st.lists(
            st.fixed_dictionaries({"operator": operators, "value": label_maps}), max_size=2
        ),
        "fieldOverrider": st.lists(
            st.fixed_dictionaries(
                {"fieldPath": pointers},
                optional={"json": patch_operations, "yaml": patch_operations},
            ),
            max_size=2,
        ),
    },
)


def _policy(kind: str, name: str, spec: Any) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": "default"} if kind == "OverridePolicy" else {})}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": metadata,
            "spec": spec}  # fmt: skip


shaped_specs = st.fixed_dictionaries(
    {},
    optional={
        "resourceSelectors": st.just([{"apiVersion": "apps/v1", "kind": "Deployment"}]),
        "overrideRules": st.lists(
            st.fixed_dictionaries(
                {"overriders": overriders},
                optional={
                    "targetCluster": from_schema(crd_schema(POLICIES, "spec", "targetCluster"))
                },
            ),
            max_size=2,
        ),
        "overriders": overriders,
    },
)
specs = st.one_of(shaped_specs, shaped_specs, from_schema(crd_schema(POLICIES, "spec")))
policies = st.lists(
    st.builds(
        _policy,
        st.sampled_from(["OverridePolicy", "ClusterOverridePolicy"]),
        st.sampled_from(["a", "b"]),
        specs,
    ),
    min_size=1,
    max_size=3,
)


def _name(policy: dict[str, Any]) -> str:
    metadata = policy["metadata"]
    return (
        f"{metadata['namespace']}/{metadata['name']}"
        if "namespace" in metadata
        else metadata["name"]
    )


def _apply(manifest: dict[str, Any], found: list[dict[str, Any]]) -> OverrideResult | OverrideError:
    """The result of applying ``found`` to ``manifest`` in member1, or the OverrideError."""
    try:
        with within(5):
            result = apply_overrides(
                manifest,
                MEMBER,
                cluster_override_policies=[p for p in found if "namespace" not in p["metadata"]],
                override_policies=[p for p in found if "namespace" in p["metadata"]],
            )
            result.annotations()
    except OverrideError as error:
        return error
    return result


@fuzz_settings(max_examples=250)
@given(found=policies)
def test_overrides_apply_or_raise_an_override_error(found: list[dict[str, Any]]) -> None:
    manifest = copy.deepcopy(DEPLOYMENT)
    outcome = _apply(manifest, found)
    event(type(outcome).__name__)
    if isinstance(outcome, OverrideError):
        assert outcome.policy in {_name(policy) for policy in found}
        assert str(outcome)
    else:
        # The manifest goes into a Work: it must still be JSON, and so must the annotations.
        json.dumps(outcome.manifest, allow_nan=False)
        # Whatever the policies say, the member gets the template's object (#26 item 1).
        assert identity_of(outcome.manifest) == identity_of(DEPLOYMENT)
        assert all(isinstance(value, str) for value in outcome.annotations().values())
    assert manifest == DEPLOYMENT, "the caller's manifest is never changed"


@fuzz_settings(max_examples=30)
@given(depth=st.integers(1, 1_000), path=st.sampled_from(["/spec/extra", "/metadata/labels"]))
def test_a_value_of_any_depth_is_applied_or_refused(depth: int, path: str) -> None:
    # The apiserver's JSON accepts about 1,000 levels; copying and patching recurse on them.
    plaintext = [{"path": path, "operator": "add", "value": deep(depth)}]
    policy = _policy("ClusterOverridePolicy", "deep", {"overriders": {"plaintext": plaintext}})
    outcome = _apply(DEPLOYMENT, [policy])
    event(type(outcome).__name__)
    if isinstance(outcome, OverrideError):
        assert outcome.policy == "deep"
