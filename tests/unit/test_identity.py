"""A manifest keeps its template's identity (issue #26 item 1).

No override entry, ReviseReplica or Retain result may change apiVersion, kind, namespace or name:
a namespaced OverridePolicy turned a tenant's ConfigMap into a ClusterRoleBinding to cluster-admin
with two plaintext operations. The binding controller refuses the rule (OverriderError naming the
entry), the interpreter refuses the result (IdentityChanged), and admission refuses the policy.
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import identity_change, identity_of
from controllers.binding import OverrideError, OverriderError, apply_overriders, apply_overrides
from controllers.interpreter import IdentityChanged, Interpreter, Operation
from controllers.webhook.override import override_policy_problems
from reconcile import GVK

Obj = dict[str, Any]
CONFIG_MAP = GVK("", "v1", "ConfigMap")


def config_map() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "tenant", "labels": {"app": "a"}},
        "data": {"config": "name: settings\n"},
    }


CLUSTER_ADMIN: list[Obj] = [
    {"path": "/kind", "operator": "replace", "value": "ClusterRoleBinding"},
    {"path": "/apiVersion", "operator": "replace", "value": "rbac.authorization.k8s.io/v1"},
    {"path": "/metadata/namespace", "operator": "remove"},
    {"path": "/roleRef", "operator": "add", "value": {"kind": "ClusterRole", "name": "x"}},
]


def test_the_identity_names_each_changed_field() -> None:
    before = identity_of(config_map())
    after = config_map()
    after["kind"] = "Secret"
    del after["metadata"]["namespace"]
    assert (
        identity_change(before, after)
        == "kind 'ConfigMap' -> 'Secret'; metadata.namespace 'tenant' -> None"
    )
    assert identity_change(before, config_map()) is None


def _plaintext(path: str, value: Any) -> Obj:
    return {"plaintext": [{"path": path, "operator": "replace", "value": value}]}


FIELD_RENAME: Obj = {
    "fieldOverrider": [
        {
            "fieldPath": "/metadata/name",
            "yaml": [{"subPath": "", "operator": "replace", "value": "other"}],
        }
    ]
}


@pytest.mark.parametrize(
    ("overriders", "words"),
    [
        pytest.param(
            {"plaintext": CLUSTER_ADMIN}, "kind 'ConfigMap' -> 'ClusterRoleBinding'", id="kind"
        ),
        pytest.param(
            {"plaintext": CLUSTER_ADMIN[2:]}, "namespace 'tenant' -> None", id="cluster-scoped"
        ),
        pytest.param(
            _plaintext("/metadata/namespace", "kube-system"), "-> 'kube-system'", id="namespace"
        ),
        pytest.param(
            _plaintext("/metadata", {"name": "settings"}), "namespace", id="whole-metadata"
        ),
        pytest.param(_plaintext("/apiVersion", "v2"), "apiVersion 'v1' -> 'v2'", id="version"),
        pytest.param(FIELD_RENAME, "metadata.name 'settings' -> 'other", id="field-overrider"),
    ],
)
def test_an_overrider_that_changes_the_identity_is_refused(overriders: Obj, words: str) -> None:
    with pytest.raises(OverriderError) as caught:
        apply_overriders(config_map(), overriders)
    assert caught.value.entry.endswith("[0]")
    assert words in caught.value.reason
    assert "identity" in caught.value.reason


def test_changes_besides_the_identity_still_apply() -> None:
    obj = config_map()
    apply_overriders(
        obj,
        {
            "labelsOverrider": [{"operator": "add", "value": {"tier": "web"}}],
            "plaintext": [{"path": "/data/extra", "operator": "add", "value": "1"}],
        },
    )
    assert obj["metadata"]["labels"] == {"app": "a", "tier": "web"}
    assert obj["data"]["extra"] == "1"


def test_a_namespaced_policy_cannot_make_a_cluster_admin_binding() -> None:
    policy = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "OverridePolicy",
        "metadata": {"name": "escalate", "namespace": "tenant"},
        "spec": {"overrideRules": [{"overriders": {"plaintext": CLUSTER_ADMIN}}]},
    }
    with pytest.raises(OverrideError) as caught:
        apply_overrides(config_map(), {"metadata": {"name": "m1"}}, override_policies=[policy])
    assert "escalate" in str(caught.value)
    assert "plaintext[0]" in str(caught.value)
    assert "refused" in str(caught.value)


class Rewriting:
    """An interpreter source (a webhook, say) whose results are ``into``'s object."""

    def __init__(self, into: Obj) -> None:
        self.into = into

    def handles(self, gvk: GVK, operation: Operation) -> bool:
        return gvk == CONFIG_MAP

    async def revise_replica(self, obj: Obj, replicas: int) -> Obj:
        return self.into

    async def retain(self, desired: Obj, observed: Obj) -> Obj:
        return self.into


def _interpreter(into: Obj) -> Interpreter:
    source: Any = Rewriting(into)
    return Interpreter(webhooks={"rewriting": source}, thirdparty=None, native=None)


@pytest.mark.asyncio(loop_scope="session")
@pytest.mark.parametrize("operation", [Operation.REVISE_REPLICA, Operation.RETAIN])
async def test_an_interpreter_result_of_another_identity_is_refused(operation: Operation) -> None:
    other = config_map()
    other["metadata"]["namespace"] = "kube-system"
    interpreter = _interpreter(other)
    call = (
        interpreter.retain(config_map(), config_map())
        if operation is Operation.RETAIN
        else interpreter.revise_replica(config_map(), 2)
    )
    with pytest.raises(IdentityChanged) as caught:
        await call
    assert caught.value.operation is operation
    assert "metadata.namespace 'tenant' -> 'kube-system'" in str(caught.value)


@pytest.mark.asyncio(loop_scope="session")
async def test_an_interpreter_result_of_the_same_identity_passes() -> None:
    revised = config_map()
    revised["data"] = {"replicas": "2"}
    assert await _interpreter(revised).revise_replica(config_map(), 2) == revised


def _policy(overriders: Obj) -> Obj:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "OverridePolicy",
        "metadata": {"name": "p", "namespace": "tenant"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}],
            "overrideRules": [{"overriders": overriders}],
        },
    }


@pytest.mark.parametrize(
    "path", ["/kind", "/apiVersion", "/metadata/namespace", "/metadata/name", "/metadata", ""]
)
def test_admission_refuses_plaintext_at_or_above_the_identity(path: str) -> None:
    operation = {"path": path, "operator": "replace", "value": "x"}
    problems = override_policy_problems(_policy({"plaintext": [operation]}))
    assert len(problems) == 1
    assert "plaintext[0].path" in problems[0]
    assert "must not reach the object's apiVersion, kind, namespace or name" in problems[0]


def test_admission_refuses_a_field_overrider_or_image_predicate_at_the_identity() -> None:
    field = {
        "fieldPath": "/metadata/name",
        "yaml": [{"subPath": "", "operator": "replace", "value": "x"}],
    }
    image = {
        "component": "Tag",
        "operator": "replace",
        "value": "1",
        "predicate": {"path": "/kind"},
    }
    problems = override_policy_problems(
        _policy({"fieldOverrider": [field], "imageOverrider": [image]})
    )
    assert [p.split(":")[0] for p in problems] == [
        "spec.overrideRules[0].overriders.imageOverrider[0].predicate.path",
        "spec.overrideRules[0].overriders.fieldOverrider[0].fieldPath",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "path", ["/metadata/labels/app", "/metadata/na~1me", "/metadata/namespaces", "/data/kind"]
)
def test_admission_lets_other_paths_through(path: str) -> None:
    operation = {"path": path, "operator": "add", "value": "x"}
    assert override_policy_problems(_policy({"plaintext": [operation]})) == []
