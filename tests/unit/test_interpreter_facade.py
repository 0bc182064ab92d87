"""The Interpreter picks, per kind and operation: customization > webhook > bundled > native.

Customizations and webhooks come and go at runtime; several customizations for one kind merge by
operation (first name wins); nothing handling a kind is NotSupported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

import controllers.interpreter as interpreter_package
from controllers.interpreter import (
    AggregatedStatusItem,
    Backend,
    Component,
    CustomizationSet,
    DependentObjectReference,
    Interpreter,
    InterpreterError,
    InvalidCustomization,
    LuaSyntaxError,
    NativeBackend,
    NotSupported,
    Operation,
    ReplicaRequirements,
    bundled_customizations,
    customizations_from_yaml,
    parse_customization,
)
from reconcile import GVK

asyncio_test = pytest.mark.asyncio(loop_scope="session")
"""Marks the async tests (strict mode); a module-wide pytestmark would warn on the sync ones."""

Obj = dict[str, Any]
DEPLOYMENT = GVK("apps", "v1", "Deployment")
CLONE_SET = GVK("apps.kruise.io", "v1alpha1", "CloneSet")


class FakeWebhook:
    """A webhook backend answering fixed values for the kinds and operations it is given."""

    def __init__(self, name: str, rules: set[tuple[GVK, Operation]]) -> None:
        self.name = name
        self.rules = rules

    def handles(self, gvk: GVK, operation: Operation) -> bool:
        return (gvk, operation) in self.rules

    async def get_replicas(self, obj: Obj) -> tuple[int, ReplicaRequirements | None]:
        return 42, ReplicaRequirements(namespace=self.name)

    async def revise_replica(self, obj: Obj, replicas: int) -> Obj:
        return {**obj, "revisedBy": self.name}

    async def retain(self, desired: Obj, observed: Obj) -> Obj:
        return {**desired, "retainedBy": self.name}

    async def aggregate_status(self, obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
        return {**obj, "status": {"by": self.name, "items": len(items)}}

    async def reflect_status(self, obj: Obj) -> Obj | None:
        return {"by": self.name}

    async def interpret_health(self, obj: Obj) -> bool:
        return False

    async def get_dependencies(self, obj: Obj) -> list[DependentObjectReference]:
        return [DependentObjectReference("v1", "Secret", name=self.name)]

    async def get_components(self, obj: Obj) -> list[Component]:
        return [Component(self.name, 1)]


def customization(name: str, target: GVK, **scripts: str) -> Obj:
    return {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": name},
        "spec": {
            "target": {"apiVersion": target.api_version, "kind": target.kind},
            "customizations": {field: {"luaScript": lua} for field, lua in scripts.items()},
        },
    }


def replicas_script(n: int) -> str:
    return f"function GetReplicas(obj) return {n}, nil end"


DEPLOY: Obj = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns"},
    "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c"}]}}},
}
CLONE: Obj = {**DEPLOY, "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet"}


def test_every_source_is_a_backend() -> None:
    assert isinstance(NativeBackend(), Backend)
    assert isinstance(CustomizationSet(), Backend)
    assert isinstance(FakeWebhook("w", set()), Backend)


def test_the_package_exports_a_sorted_complete_list() -> None:
    exported = list(interpreter_package.__all__)
    assert exported == sorted(exported)
    assert all(hasattr(interpreter_package, name) for name in exported)


@asyncio_test
async def test_precedence_is_customization_then_webhook_then_bundled_then_native() -> None:
    webhook = FakeWebhook("hook", {(DEPLOYMENT, Operation.INTERPRET_REPLICA),
                                   (CLONE_SET, Operation.INTERPRET_REPLICA)})  # fmt: skip
    interpreter = Interpreter(webhooks={"hook": webhook})
    assert (await interpreter.get_replicas(DEPLOY))[0] == 42  # webhook over native
    assert (await interpreter.get_replicas(CLONE))[0] == 42  # webhook over bundled
    await interpreter.apply_customization(
        customization("mine", DEPLOYMENT, replicaResource=replicas_script(7))
    )
    assert (await interpreter.get_replicas(DEPLOY))[0] == 7  # customization over webhook
    assert interpreter.remove_webhook("hook") is webhook
    assert interpreter.remove_webhook("hook") is None
    assert (await interpreter.get_replicas(CLONE))[0] == 3  # bundled CloneSet script
    assert interpreter.remove_customization("mine")
    assert (await interpreter.get_replicas(DEPLOY))[0] == 3  # native again
    assert (
        interpreter.source_for(DEPLOYMENT, Operation.INTERPRET_REPLICA).__class__ is NativeBackend
    )


@asyncio_test
async def test_precedence_is_per_operation() -> None:
    interpreter = Interpreter()
    await interpreter.apply_customization(customization(
        "retain-only", DEPLOYMENT,
        retention="function Retain(d, o) d.kept = true return d end",
    ))  # fmt: skip
    assert (await interpreter.retain(DEPLOY, DEPLOY))["kept"] is True
    assert (await interpreter.get_replicas(DEPLOY))[0] == 3  # still native
    health = await interpreter.interpret_health({**DEPLOY, "status": {}})
    assert health is False  # native: 0 updated < 3 wanted


@asyncio_test
async def test_webhooks_are_asked_in_name_order() -> None:
    rules = {(DEPLOYMENT, op) for op in Operation}
    interpreter = Interpreter(webhooks={"b": FakeWebhook("b", rules)})
    first = FakeWebhook("a", {(DEPLOYMENT, Operation.INTERPRET_STATUS)})
    assert interpreter.add_webhook("a", first) is None
    assert interpreter.add_webhook("a", FakeWebhook("a", rules)) is first
    assert await interpreter.reflect_status(DEPLOY) == {"by": "a"}
    assert (await interpreter.revise_replica(DEPLOY, 1))["revisedBy"] == "a"
    assert (await interpreter.retain(DEPLOY, DEPLOY))["retainedBy"] == "a"
    assert (await interpreter.aggregate_status(DEPLOY, []))["status"] == {"by": "a", "items": 0}
    assert await interpreter.interpret_health(DEPLOY) is False
    assert await interpreter.get_dependencies(DEPLOY) == [
        DependentObjectReference("v1", "Secret", name="a")
    ]
    assert await interpreter.get_components(DEPLOY) == [Component("a", 1)]


@asyncio_test
async def test_customizations_for_one_kind_merge_by_operation_first_name_wins() -> None:
    interpreter = Interpreter(native=None, thirdparty=None)
    await interpreter.apply_customization(customization(
        "b-second", DEPLOYMENT, replicaResource=replicas_script(2),
        healthInterpretation="function InterpretHealth(o) return true end",
    ))  # fmt: skip
    await interpreter.apply_customization(
        customization("a-first", DEPLOYMENT, replicaResource=replicas_script(1))
    )
    assert (await interpreter.get_replicas(DEPLOY))[0] == 1
    assert await interpreter.interpret_health(DEPLOY) is True  # only b-second defines it
    interpreter.remove_customization("a-first")
    assert (await interpreter.get_replicas(DEPLOY))[0] == 2
    assert interpreter.customizations.names() == ["b-second"]


def dependencies_script(*names: str) -> str:
    refs = ", ".join(f'{{apiVersion = "v1", kind = "ConfigMap", namespace = "ns", name = "{n}"}}'
                     for n in names)  # fmt: skip
    return f"function GetDependencies(obj) return {{{refs}}} end"


@asyncio_test
async def test_every_dependency_interpretation_runs_merged_without_repeats_and_sorted() -> None:
    # Karmada's ConfigurableInterpreter runs the dependencyInterpretation of every customization
    # targeting the kind, keeps a set of what they return and sorts it.
    interpreter = Interpreter(native=None, thirdparty=None)
    for name, script in (("a", dependencies_script("z", "m", "z")),
                         ("b", dependencies_script("m", "b"))):  # fmt: skip
        await interpreter.apply_customization(
            customization(name, DEPLOYMENT, dependencyInterpretation=script)
        )
    found = await interpreter.get_dependencies(DEPLOY)
    assert [d.name for d in found] == ["b", "m", "z"]


@asyncio_test
async def test_the_interpreter_leaves_out_repeated_dependencies_of_any_source() -> None:
    class Twice(FakeWebhook):
        async def get_dependencies(self, obj: Obj) -> list[DependentObjectReference]:
            return [*(await super().get_dependencies(obj)) * 2,
                    DependentObjectReference("v1", "Secret", name="other")]  # fmt: skip

    webhook = Twice("hook", {(DEPLOYMENT, Operation.INTERPRET_DEPENDENCY)})
    interpreter = Interpreter(native=None, thirdparty=None, webhooks={"hook": webhook})
    found = await interpreter.get_dependencies(DEPLOY)
    assert [d.name for d in found] == ["hook", "other"]


@asyncio_test
async def test_a_broken_update_keeps_the_previous_version() -> None:
    interpreter = Interpreter(native=None, thirdparty=None)
    applied = await interpreter.apply_customization(
        customization("mine", DEPLOYMENT, replicaResource=replicas_script(5))
    )
    assert applied.scripts == {Operation.INTERPRET_REPLICA: replicas_script(5)}
    script = interpreter.customizations.script_for(DEPLOYMENT, Operation.INTERPRET_REPLICA)
    with pytest.raises(LuaSyntaxError, match="mine/replicaResource"):
        await interpreter.apply_customization(
            customization("mine", DEPLOYMENT, replicaResource="function GetReplicas(")
        )
    assert (await interpreter.get_replicas(DEPLOY))[0] == 5
    # Re-applying unchanged scripts reuses the compiled state.
    await interpreter.apply_customization(customization(
        "mine", DEPLOYMENT, replicaResource=replicas_script(5),
        healthInterpretation="function InterpretHealth(o) return true end",
    ))  # fmt: skip
    assert interpreter.customizations.script_for(DEPLOYMENT, Operation.INTERPRET_REPLICA) is script
    assert "mine" in interpreter.customizations
    assert len(interpreter.customizations) == 1


@asyncio_test
async def test_nothing_handling_a_kind_is_not_supported() -> None:
    interpreter = Interpreter()
    thing = {"apiVersion": "example.io/v1", "kind": "Thing", "metadata": {"name": "t"}}
    assert not interpreter.handles(GVK("example.io", "v1", "Thing"), Operation.INTERPRET_REPLICA)
    with pytest.raises(NotSupported, match=r"InterpretReplica for example\.io/v1 Thing"):
        await interpreter.get_replicas(thing)
    assert await interpreter.reflect_status({**thing, "status": {"a": 1}}) == {"a": 1}
    with pytest.raises(InterpreterError, match="without apiVersion and kind"):
        await interpreter.get_replicas({"metadata": {}})
    bare = Interpreter(native=None, thirdparty=None)
    with pytest.raises(NotSupported):
        await bare.reflect_status(DEPLOY)


@asyncio_test
async def test_the_bundled_customizations_cover_three_kinds() -> None:
    bundled = bundled_customizations()
    assert bundled is bundled_customizations()
    assert bundled.names() == [
        "bundled-apps.kruise.io-cloneset",
        "bundled-argoproj.io-workflow",
        "bundled-kubeflow.org-pytorchjob",
    ]
    assert bundled.get("bundled-apps.kruise.io-cloneset") is not None
    assert bundled.get("nope") is None
    with pytest.raises(NotSupported):
        await bundled.get_replicas(DEPLOY)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"apiVersion": "v1"}, "expected config.karmada.io/v1alpha1 ResourceInterpreterCustom"),
        ({"metadata": {}}, "metadata.name must be a non-empty string"),
        ({"spec": None}, "spec must be an object"),
        ({"spec": {"customizations": {}}}, "spec.target must be an object"),
        ({"spec": {"target": {"apiVersion": "v1"}}}, "spec.target.kind must be a non-empty string"),
        ({"spec": {"target": {"apiVersion": "v1", "kind": "Pod"}, "customizations": []}},
         "spec.customizations must be an object"),
        ({"spec": {"target": {"apiVersion": "v1", "kind": "Pod"},
                   "customizations": {"retention": "x"}}}, "retention must be an object"),
        ({"spec": {"target": {"apiVersion": "v1", "kind": "Pod"},
                   "customizations": {"retention": {"luaScript": " "}}}},
         "retention.luaScript must be a non-empty string"),
    ],
)  # fmt: skip
def test_malformed_customizations_say_which_field(change: Obj, message: str) -> None:
    obj = {**customization("c", DEPLOYMENT, replicaResource=replicas_script(1)), **change}
    with pytest.raises(InvalidCustomization, match=message):
        parse_customization(obj)


def test_customizations_from_yaml() -> None:
    text = "kind: Other\n---\n" + "\n".join(
        [
            "apiVersion: config.karmada.io/v1alpha1",
            "kind: ResourceInterpreterCustomization",
            "metadata: {name: c}",
            "spec: {target: {apiVersion: v1, kind: Pod}, customizations: {}}",
        ]
    )
    [found] = customizations_from_yaml(text)
    assert parse_customization(found).target == GVK("", "v1", "Pod")
    with pytest.raises(InvalidCustomization, match="no ResourceInterpreterCustomization"):
        customizations_from_yaml("kind: Other")
    with pytest.raises(InvalidCustomization, match="not valid YAML"):
        customizations_from_yaml("a: [")


@asyncio_test
async def test_listeners_hear_which_kinds_a_change_concerns() -> None:
    interpreter = Interpreter()
    heard: list[tuple[bool, bool]] = []
    interpreter.subscribe(lambda kinds: heard.append((kinds(DEPLOYMENT), kinds(CLONE_SET))))

    await interpreter.apply_customization(
        customization("c", CLONE_SET, replicaResource=replicas_script(1))
    )
    await interpreter.apply_customization(
        customization("c", DEPLOYMENT, replicaResource=replicas_script(2))
    )
    interpreter.remove_customization("c")
    webhook = FakeWebhook("w", {(CLONE_SET, Operation.RETAIN)})
    interpreter.add_webhook("w", webhook)
    interpreter.add_webhook("w", FakeWebhook("w", {(DEPLOYMENT, Operation.RETAIN)}))
    interpreter.remove_webhook("w")

    assert heard == [
        (False, True),  # the new customization's kind
        (True, True),  # moved from one kind to another: both
        (True, False),
        (False, True),  # the kinds the webhook has rules for
        (True, True),  # the replaced one's and the new one's
        (True, False),
    ]
