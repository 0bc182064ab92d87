"""Interpreter is the resource interpreter: what Karmada's controllers ask about any kind of object.

How many replicas does a template want, and what does each need? How is a member's copy revised
to its share, which member-owned fields survive an update, what status is worth collecting, how
do member statuses combine on the template, is a member object healthy, what must be propagated
with it? ``Interpreter`` answers from, in order: ResourceInterpreterCustomizations (Lua), webhook
backends, bundled third-party Lua customizations, native defaults. Every source implements the
``Backend`` protocol. ``add_interpret_parser`` (in ``controllers.interpreter.cli``) adds the
``reconcile interpret`` command that runs one operation on files.
"""

from controllers.interpreter.backend import Backend
from controllers.interpreter.customization import (
    Customization,
    CustomizationSet,
    bundled_customizations,
    customizations_from_yaml,
    parse_customization,
)
from controllers.interpreter.facade import ChangeListener, Interpreter, KindFilter
from controllers.interpreter.lua import DEFAULT_MAX_MEMORY, DEFAULT_TIMEOUT, LuaScript
from controllers.interpreter.native import NativeBackend
from controllers.interpreter.pool import WorkerPool, default_pool
from controllers.interpreter.types import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    IdentityChanged,
    InterpreterError,
    InvalidCustomization,
    LuaBusy,
    LuaError,
    LuaLimitExceeded,
    LuaQuarantined,
    LuaReturnTypeError,
    LuaRuntimeError,
    LuaSyntaxError,
    LuaTimeout,
    LuaWorkerDied,
    NodeClaim,
    NotSupported,
    Operation,
    ReplicaRequirements,
    ResourceHealth,
)

__all__ = [
    "AggregatedStatusItem",
    "Backend",
    "ChangeListener",
    "Component",
    "Customization",
    "CustomizationSet",
    "DEFAULT_MAX_MEMORY",
    "DEFAULT_TIMEOUT",
    "DependentObjectReference",
    "IdentityChanged",
    "Interpreter",
    "InterpreterError",
    "InvalidCustomization",
    "KindFilter",
    "LuaBusy",
    "LuaError",
    "LuaLimitExceeded",
    "LuaQuarantined",
    "LuaReturnTypeError",
    "LuaRuntimeError",
    "LuaScript",
    "LuaSyntaxError",
    "LuaTimeout",
    "LuaWorkerDied",
    "NativeBackend",
    "NodeClaim",
    "NotSupported",
    "Operation",
    "ReplicaRequirements",
    "ResourceHealth",
    "WorkerPool",
    "bundled_customizations",
    "customizations_from_yaml",
    "default_pool",
    "parse_customization",
]
