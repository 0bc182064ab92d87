"""Config is the config.karmada.io/v1alpha1 API: how Karmada interprets resources, as typed dicts.

A ResourceInterpreterCustomization holds Lua scripts for one kind, one per interpreter operation;
a ResourceInterpreterWebhookConfiguration lists webhooks that answer the same operations over
HTTPS. Customizations win over webhooks, which win over the built-in interpreter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypedDict, cast

from controllers.api.shape import object_field
from reconcile import GVK, Resource

__all__ = [
    "AGGREGATE_STATUS",
    "CONFIG_GROUP",
    "CustomizationRules",
    "CustomizationTarget",
    "INTERPRET_COMPONENT",
    "INTERPRET_DEPENDENCY",
    "INTERPRET_HEALTH",
    "INTERPRET_REPLICA",
    "INTERPRET_STATUS",
    "InterpreterOperation",
    "LuaScript",
    "RESOURCE_INTERPRETER_CUSTOMIZATIONS",
    "RESOURCE_INTERPRETER_CUSTOMIZATION_GVK",
    "RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATIONS",
    "RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK",
    "RETAIN",
    "REVISE_REPLICA",
    "ResourceInterpreterCustomizationSpec",
    "ResourceInterpreterWebhook",
    "RuleWithOperations",
    "ServiceReference",
    "WebhookClientConfig",
    "customization_spec",
    "customization_target",
    "webhooks_of",
]

CONFIG_GROUP: Final = "config.karmada.io"

RESOURCE_INTERPRETER_CUSTOMIZATION_GVK: Final = GVK(
    CONFIG_GROUP, "v1alpha1", "ResourceInterpreterCustomization"
)
RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK: Final = GVK(
    CONFIG_GROUP, "v1alpha1", "ResourceInterpreterWebhookConfiguration"
)
RESOURCE_INTERPRETER_CUSTOMIZATIONS: Final = Resource(
    RESOURCE_INTERPRETER_CUSTOMIZATION_GVK, "resourceinterpretercustomizations", False
)
RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATIONS: Final = Resource(
    RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK,
    "resourceinterpreterwebhookconfigurations",
    False,
)

InterpreterOperation = Literal[
    "InterpretReplica",
    "ReviseReplica",
    "InterpretStatus",
    "Retain",
    "AggregateStatus",
    "InterpretHealth",
    "InterpretDependency",
    "InterpretComponent",
]

INTERPRET_REPLICA: Final = "InterpretReplica"
REVISE_REPLICA: Final = "ReviseReplica"
INTERPRET_STATUS: Final = "InterpretStatus"
RETAIN: Final = "Retain"
AGGREGATE_STATUS: Final = "AggregateStatus"
INTERPRET_HEALTH: Final = "InterpretHealth"
INTERPRET_DEPENDENCY: Final = "InterpretDependency"
INTERPRET_COMPONENT: Final = "InterpretComponent"


class CustomizationTarget(TypedDict, total=False):
    """The kind a customization applies to."""

    apiVersion: str
    kind: str


class LuaScript(TypedDict, total=False):
    """One interpreter rule: a Lua script defining the operation's function."""

    luaScript: str


class CustomizationRules(TypedDict, total=False):
    """The Lua rules, one per operation; a missing rule falls through to webhooks and built-ins."""

    retention: LuaScript
    replicaResource: LuaScript
    replicaRevision: LuaScript
    statusReflection: LuaScript
    statusAggregation: LuaScript
    healthInterpretation: LuaScript
    dependencyInterpretation: LuaScript
    componentResource: LuaScript


class ResourceInterpreterCustomizationSpec(TypedDict, total=False):
    """The spec of a ResourceInterpreterCustomization."""

    target: CustomizationTarget
    customizations: CustomizationRules


class ServiceReference(TypedDict, total=False):
    """A Service exposing a webhook; port defaults to 443."""

    namespace: str
    name: str
    path: str
    port: int


class WebhookClientConfig(TypedDict, total=False):
    """How to reach a webhook: a URL or a Service, and the CA bundle (base64 PEM)."""

    url: str
    service: ServiceReference
    caBundle: str


class RuleWithOperations(TypedDict, total=False):
    """Operations on kinds a webhook handles; ``*`` matches everything."""

    operations: list[str]
    apiGroups: list[str]
    apiVersions: list[str]
    kinds: list[str]


class ResourceInterpreterWebhook(TypedDict, total=False):
    """One webhook of a ResourceInterpreterWebhookConfiguration; timeoutSeconds defaults to 10."""

    name: str
    clientConfig: WebhookClientConfig
    rules: list[RuleWithOperations]
    timeoutSeconds: int
    interpreterContextVersions: list[str]


def customization_spec(customization: Mapping[str, Any]) -> ResourceInterpreterCustomizationSpec:
    """The spec of a ResourceInterpreterCustomization (empty if missing or not an object)."""
    return cast(ResourceInterpreterCustomizationSpec, object_field(customization, "spec"))


def customization_target(customization: Mapping[str, Any]) -> GVK:
    """The GVK a ResourceInterpreterCustomization applies to.

    Raises:
        ValueError: the customization has no complete ``spec.target``.
    """
    target = customization_spec(customization).get("target") or {}
    api_version, kind = target.get("apiVersion"), target.get("kind")
    if not api_version or not kind:
        raise ValueError("ResourceInterpreterCustomization has no spec.target apiVersion and kind")
    return GVK.from_api_version(api_version, kind)


def webhooks_of(configuration: Mapping[str, Any]) -> list[ResourceInterpreterWebhook]:
    """The webhooks of a ResourceInterpreterWebhookConfiguration."""
    return cast(list[ResourceInterpreterWebhook], configuration.get("webhooks") or [])
