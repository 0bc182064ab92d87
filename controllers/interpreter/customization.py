"""Customization turns ResourceInterpreterCustomization objects into an interpreter backend.

A ResourceInterpreterCustomization (config.karmada.io/v1alpha1, cluster-scoped) targets one kind
(``spec.target.apiVersion/kind``) and holds a Lua script per operation under
``spec.customizations``: replicaResource, replicaRevision, retention, statusReflection,
statusAggregation, healthInterpretation, dependencyInterpretation, componentResource.

A ``CustomizationSet`` keeps customizations by name; ``apply`` checks each new script in a worker
process (it compiles and its top level runs: a broken customization is refused and the previous
version stays), and calls run in workers (``lua``). Several customizations may target the same
kind: per operation, the one first by name that defines it wins (Karmada's rule), except
dependencyInterpretation, where every one runs and the dependencies they return are merged,
without repeats, sorted by apiVersion, kind, namespace and name (Karmada's
ConfigurableInterpreter). Controllers watching the CRD call ``apply`` and ``remove``; the
bundled third-party customizations are one more set, loaded from the YAML files shipped in
``thirdparty/`` and run in the same workers, as they read the same untrusted objects.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

import anyio
import yaml

from controllers.interpreter.lua import DEFAULT_MAX_MEMORY, DEFAULT_TIMEOUT, LuaScript
from controllers.interpreter.pool import DEFAULT_QUEUE_TIMEOUT, KILL_GRACE, WorkerPool
from controllers.interpreter.pool import default_pool as _default_pool
from controllers.interpreter.types import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    InvalidCustomization,
    LuaBusy,
    NotSupported,
    Operation,
    ReplicaRequirements,
    unique_dependencies,
)
from reconcile import GVK

__all__ = [
    "API_VERSION",
    "CHECK_TIMEOUT",
    "KIND",
    "RULE_FIELDS",
    "Customization",
    "CustomizationSet",
    "bundled_customizations",
    "customizations_from_yaml",
    "parse_customization",
    "yaml_problem",
]

API_VERSION: Final = "config.karmada.io/v1alpha1"
KIND: Final = "ResourceInterpreterCustomization"

RULE_FIELDS: Final = {
    Operation.INTERPRET_REPLICA: "replicaResource",
    Operation.REVISE_REPLICA: "replicaRevision",
    Operation.RETAIN: "retention",
    Operation.AGGREGATE_STATUS: "statusAggregation",
    Operation.INTERPRET_STATUS: "statusReflection",
    Operation.INTERPRET_HEALTH: "healthInterpretation",
    Operation.INTERPRET_DEPENDENCY: "dependencyInterpretation",
    Operation.INTERPRET_COMPONENT: "componentResource",
}
"""The ``spec.customizations`` field holding each operation's script."""

CHECK_TIMEOUT: Final = 5.0
"""Seconds ``CustomizationSet.apply`` may take to check a customization's new scripts, waits for
a worker included: well under the API server's 10 s admission webhook timeout, since the webhook
checks a customization the same way."""

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Customization:
    """A parsed ResourceInterpreterCustomization: its name, target kind and scripts."""

    name: str
    target: GVK
    scripts: Mapping[Operation, str]


def _field(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise InvalidCustomization(f"{where}.{key} must be an object")
    return value


def _text(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidCustomization(f"{where}.{key} must be a non-empty string")
    return value


def parse_customization(obj: Mapping[str, Any]) -> Customization:
    """Read a ResourceInterpreterCustomization object (decoded JSON or YAML).

    Raises:
        InvalidCustomization: wrong apiVersion/kind, no name, no target, or a rule without a
            luaScript.
    """
    if obj.get("apiVersion") != API_VERSION or obj.get("kind") != KIND:
        raise InvalidCustomization(
            f"expected {API_VERSION} {KIND}, got {obj.get('apiVersion')} {obj.get('kind')}"
        )
    name = _text(_field(obj, "metadata", "object"), "name", "metadata")
    spec = _field(obj, "spec", name)
    target = _field(spec, "target", f"{name}: spec")
    gvk = GVK.from_api_version(
        _text(target, "apiVersion", f"{name}: spec.target"),
        _text(target, "kind", f"{name}: spec.target"),
    )
    rules = spec.get("customizations")
    rules = {} if rules is None else rules
    if not isinstance(rules, Mapping):
        raise InvalidCustomization(f"{name}: spec.customizations must be an object")
    scripts: dict[Operation, str] = {}
    for operation, field in RULE_FIELDS.items():
        rule = rules.get(field)
        if rule is not None:
            where = f"{name}: spec.customizations.{field}"
            if not isinstance(rule, Mapping):
                raise InvalidCustomization(f"{where} must be an object")
            scripts[operation] = _text(rule, "luaScript", where)
    return Customization(name, gvk, scripts)


def yaml_problem(error: yaml.YAMLError) -> str:
    """A YAML parse error in one line: what is wrong and where."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(error).split())


def customizations_from_yaml(text: str) -> list[Obj]:
    """The ResourceInterpreterCustomization documents of a (multi-document) YAML text.

    Raises:
        InvalidCustomization: the text is not YAML, or holds no such document.
    """
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        raise InvalidCustomization(f"not valid YAML: {yaml_problem(err)}") from err
    except RecursionError as err:
        raise InvalidCustomization("not valid YAML: nested too deeply") from err
    found = [d for d in documents if isinstance(d, dict) and d.get("kind") == KIND]
    if not found:
        raise InvalidCustomization(f"no {KIND} document found")
    return found


class CustomizationSet:
    """Customizations by name, merged per kind and operation, each script run in a worker.

    Implements ``Backend``. ``timeout``, ``max_memory`` and ``queue_timeout`` (the wait for a
    worker) apply to every script's calls, ``pool`` (default: the process-wide one) runs them.
    The customizations given to the constructor are trusted to load (the bundled ones: checked by
    the tests); ``apply`` checks what it adds.
    """

    def __init__(
        self,
        customizations: Iterable[Mapping[str, Any]] = (),
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_memory: int = DEFAULT_MAX_MEMORY,
        queue_timeout: float = DEFAULT_QUEUE_TIMEOUT,
        pool: WorkerPool | None = None,
    ) -> None:
        self.timeout = timeout
        self.max_memory = max_memory
        self.queue_timeout = queue_timeout
        self.pool = pool
        self._compiled: dict[str, tuple[Customization, dict[Operation, LuaScript]]] = {}
        self._index: dict[GVK, dict[Operation, LuaScript]] = {}
        self._dependency_scripts: dict[GVK, list[LuaScript]] = {}
        for obj in customizations:
            customization, scripts, _ = self._scripts(parse_customization(obj))
            self._commit(customization, scripts)

    def __contains__(self, name: object) -> bool:
        return name in self._compiled

    def __len__(self) -> int:
        return len(self._compiled)

    def names(self) -> list[str]:
        """The names of the customizations held, sorted."""
        return sorted(self._compiled)

    def worker_pool(self) -> WorkerPool:
        """The pool the scripts run in."""
        return self.pool or _default_pool()

    def get(self, name: str) -> Customization | None:
        """The customization of that name, if held."""
        entry = self._compiled.get(name)
        return entry[0] if entry else None

    async def apply(
        self, obj: Mapping[str, Any], *, within: float = CHECK_TIMEOUT
    ) -> Customization:
        """Add a customization, or replace the one of the same name; unchanged scripts are reused.

        New scripts are compiled and their top level run in a worker first, all within
        ``within`` seconds; on error the previous version (if any) stays in effect.

        Raises:
            InvalidCustomization: the object is malformed.
            LuaError: a script does not compile or its top level fails.
            LuaBusy: the scripts could not all be checked within ``within`` seconds.
        """
        customization, scripts, new = self._scripts(parse_customization(obj))
        deadline = time.monotonic() + within
        for script in new:
            # A check waits for a worker only while its own run (timeout and kill grace) would
            # still end by the deadline; the cancel scope holds the rest (a worker's start) to it.
            left = deadline - time.monotonic()
            wait = min(script.queue_timeout, left - script.timeout - KILL_GRACE)
            with anyio.move_on_after(left) as scope:
                await script.check(queue_timeout=max(0.0, wait))
            if scope.cancelled_caught:
                raise LuaBusy(script.name, f"its check did not end within {within:g} s")
        self._commit(customization, scripts)
        return customization

    def _scripts(
        self, customization: Customization
    ) -> tuple[Customization, dict[Operation, LuaScript], list[LuaScript]]:
        """The scripts of a customization (reusing unchanged ones) and which of them are new."""
        previous = self._compiled.get(customization.name)
        old_scripts = previous[1] if previous else {}
        scripts: dict[Operation, LuaScript] = {}
        new: list[LuaScript] = []
        for operation, source in customization.scripts.items():
            old = old_scripts.get(operation)
            if old is not None and old.source == source:
                scripts[operation] = old
            else:
                scripts[operation] = LuaScript(
                    source,
                    operation,
                    name=f"{customization.name}/{RULE_FIELDS[operation]}",
                    timeout=self.timeout,
                    max_memory=self.max_memory,
                    queue_timeout=self.queue_timeout,
                    pool=self.pool,
                )
                new.append(scripts[operation])
        return customization, scripts, new

    def _commit(self, customization: Customization, scripts: dict[Operation, LuaScript]) -> None:
        self._compiled[customization.name] = (customization, scripts)
        self._reindex()

    def remove(self, name: str) -> bool:
        """Forget a customization; False if there was none of that name."""
        if self._compiled.pop(name, None) is None:
            return False
        self._reindex()
        return True

    def _reindex(self) -> None:
        index: dict[GVK, dict[Operation, LuaScript]] = {}
        dependencies: dict[GVK, list[LuaScript]] = {}
        for name in sorted(self._compiled):
            customization, scripts = self._compiled[name]
            rules = index.setdefault(customization.target, {})
            for operation, script in scripts.items():
                rules.setdefault(operation, script)
            if Operation.INTERPRET_DEPENDENCY in scripts:
                found = dependencies.setdefault(customization.target, [])
                found.append(scripts[Operation.INTERPRET_DEPENDENCY])
        self._index = index
        self._dependency_scripts = dependencies

    def script_for(self, gvk: GVK, operation: Operation) -> LuaScript | None:
        """The script that runs ``operation`` for ``gvk``, if any."""
        return self._index.get(gvk, {}).get(operation)

    def handles(self, gvk: GVK, operation: Operation) -> bool:
        """Whether some customization targets ``gvk`` with a script for ``operation``."""
        return self.script_for(gvk, operation) is not None

    def _script(self, obj: Mapping[str, Any], operation: Operation) -> LuaScript:
        gvk = GVK.of(obj)
        script = self.script_for(gvk, operation)
        if script is None:
            raise NotSupported(gvk, operation)
        return script

    async def get_replicas(self, obj: Obj) -> tuple[int, ReplicaRequirements | None]:
        """Run GetReplicas. Raises: NotSupported, LuaError."""
        return await self._script(obj, Operation.INTERPRET_REPLICA).get_replicas(obj)

    async def revise_replica(self, obj: Obj, replicas: int) -> Obj:
        """Run ReviseReplica. Raises: NotSupported, LuaError."""
        return await self._script(obj, Operation.REVISE_REPLICA).revise_replica(obj, replicas)

    async def retain(self, desired: Obj, observed: Obj) -> Obj:
        """Run Retain. Raises: NotSupported, LuaError."""
        return await self._script(desired, Operation.RETAIN).retain(desired, observed)

    async def aggregate_status(self, obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
        """Run AggregateStatus. Raises: NotSupported, LuaError."""
        return await self._script(obj, Operation.AGGREGATE_STATUS).aggregate_status(obj, items)

    async def reflect_status(self, obj: Obj) -> Obj | None:
        """Run ReflectStatus. Raises: NotSupported, LuaError."""
        return await self._script(obj, Operation.INTERPRET_STATUS).reflect_status(obj)

    async def interpret_health(self, obj: Obj) -> bool:
        """Run InterpretHealth. Raises: NotSupported, LuaError."""
        return await self._script(obj, Operation.INTERPRET_HEALTH).interpret_health(obj)

    async def get_dependencies(self, obj: Obj) -> list[DependentObjectReference]:
        """Run every GetDependencies for the kind; merged, without repeats, sorted.

        Raises:
            NotSupported, LuaError.
        """
        self._script(obj, Operation.INTERPRET_DEPENDENCY)  # NotSupported when there is none
        found: list[DependentObjectReference] = []
        for script in self._dependency_scripts.get(GVK.of(obj), []):
            found.extend(await script.get_dependencies(obj))
        return sorted(unique_dependencies(found), key=_dependency_order)

    async def get_components(self, obj: Obj) -> list[Component]:
        """Run GetComponents. Raises: NotSupported, LuaError."""
        return await self._script(obj, Operation.INTERPRET_COMPONENT).get_components(obj)


def _dependency_order(dependency: DependentObjectReference) -> tuple[str, str, str, str]:
    return (dependency.api_version, dependency.kind, dependency.namespace, dependency.name)


@functools.cache
def bundled_customizations() -> CustomizationSet:
    """The third-party customizations shipped in ``thirdparty/*.yaml``, loaded once and shared.

    Raises:
        InvalidCustomization, LuaError: a bundled file is broken (a packaging bug).
    """
    folder = resources.files("controllers.interpreter").joinpath("thirdparty")
    objects: list[Obj] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            objects.extend(customizations_from_yaml(entry.read_text(encoding="utf-8")))
    return CustomizationSet(objects)
