"""Cli is the ``reconcile interpret`` command: one interpreter operation run on files.

::

    reconcile interpret --customization FILE --operation OP [--desired-file F]
        [--observed-file F] [--status-file F] [--desired-replica N] [--output json|yaml]
        [--interpreter-customizations DIR]

With ``--customization`` only that ResourceInterpreterCustomization file runs (every document of
that kind in it, merged as the controllers would); without it the default sources answer (bundled
third-party customizations, then native defaults). ``--interpreter-customizations`` adds a
directory of customizations (Karmada's third-party tree works unchanged, see ``directory``) in
front of the bundled ones; a file of it that does not load prints one ``error:`` line on stderr
and is skipped, the operation runs with the rest. Inputs are YAML (or JSON). The object
operated on is the desired object, or the observed one when only that is given (InterpretStatus
and InterpretHealth prefer the observed one); Retain needs both. ``--status-file`` holds a list
of {clusterName, status, applied, health} items. The result prints as one object keyed by the
result names: replica and requires, revised, retained, aggregatedStatus, status, healthy,
dependencies, components. Any error prints one ``error:`` line and exits 1, hostile input
included: scripts run in interpreter workers under the same limits as in the controller-manager,
and an input nested deeper than ``MAX_INPUT_DEPTH`` or expanding (through YAML aliases) to more
than ``MAX_INPUT_NODES`` values is refused before anything runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import yaml

from controllers.interpreter.customization import (
    RULE_FIELDS,
    CustomizationSet,
    bundled_customizations,
    customizations_from_yaml,
    yaml_problem,
)
from controllers.interpreter.directory import load_customization_directory, thirdparty_backend
from controllers.interpreter.facade import Interpreter
from controllers.interpreter.types import (
    AggregatedStatusItem,
    InterpreterError,
    NotSupported,
    Operation,
)

__all__ = [
    "MAX_INPUT_DEPTH",
    "MAX_INPUT_NODES",
    "add_interpret_parser",
    "lua_workers",
    "main",
    "run_interpret",
]

MAX_INPUT_DEPTH: Final = 200
"""Levels of nesting an input file may have (real objects have a few dozen at most)."""

MAX_INPUT_NODES: Final = 1_000_000
"""Values an input file may hold, an aliased YAML node counting each time it is used."""

_OBSERVED_FIRST: Final = (Operation.INTERPRET_STATUS, Operation.INTERPRET_HEALTH)


class _InputError(Exception):
    """A command-line input is missing or unreadable."""


def lua_workers(text: str) -> int:
    """The controller-manager's ``--interpreter-lua-workers``: a count of at least 1."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return count


def add_interpret_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Register ``interpret`` on the ``reconcile`` command line; returns its parser."""
    operations = [op.value for op in Operation]
    parser = subparsers.add_parser(
        "interpret",
        help="run a resource interpreter operation on files (like karmadactl interpret)",
        description="Run one resource interpreter operation on YAML files, like karmadactl "
        "interpret: with a ResourceInterpreterCustomization, or the built-in interpreters.",
    )
    parser.add_argument(
        "--customization",
        "-f",
        metavar="FILE",
        type=Path,
        help="ResourceInterpreterCustomization file (default: built-in sources)",
    )
    parser.add_argument(
        "--operation",
        required=True,
        choices=operations,
        metavar="OP",
        help=f"one of {', '.join(operations)}",
    )
    parser.add_argument("--desired-file", metavar="FILE", type=Path, help="the desired object")
    parser.add_argument(
        "--observed-file", metavar="FILE", type=Path, help="the object observed in a member cluster"
    )
    parser.add_argument(
        "--status-file", metavar="FILE", type=Path, help="aggregated status items (AggregateStatus)"
    )
    parser.add_argument(
        "--desired-replica", metavar="N", type=int, help="replicas to revise to (ReviseReplica)"
    )
    parser.add_argument("--output", "-o", choices=("yaml", "json"), default="yaml")
    parser.add_argument(
        "--interpreter-customizations",
        metavar="DIR",
        type=Path,
        help="directory of ResourceInterpreterCustomization files, e.g. Karmada's third-party "
        "ones, asked before the bundled customizations",
    )
    parser.set_defaults(func=run_interpret)
    return parser


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise _InputError(f"cannot read {what} {path}: {err.strerror or err}") from err


def _documents(path: Path, what: str) -> list[Any]:
    try:
        documents = [d for d in yaml.safe_load_all(_read(path, what)) if d is not None]
    except yaml.YAMLError as err:
        raise _InputError(f"{what} {path} is not valid YAML: {yaml_problem(err)}") from err
    except RecursionError as err:  # PyYAML composes recursively
        raise _InputError(f"{what} {path} is nested too deeply") from err
    problem = _too_big(documents)
    if problem:
        raise _InputError(f"{what} {path} {problem}")
    return documents


def _too_big(value: Any) -> str | None:
    """Why a decoded document is refused (too deep, too many values), None if it is not."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > MAX_INPUT_NODES:
            return f"holds more than {MAX_INPUT_NODES} values (YAML aliases count each use)"
        if depth > MAX_INPUT_DEPTH:
            return f"is nested more than {MAX_INPUT_DEPTH} levels deep"
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return None


def _object(path: Path | None, what: str) -> dict[str, Any] | None:
    if path is None:
        return None
    documents = _documents(path, what)
    if not documents or not isinstance(documents[0], dict):
        raise _InputError(f"{what} {path} must hold one object")
    obj: dict[str, Any] = documents[0]
    return obj


def _status_items(path: Path | None) -> list[AggregatedStatusItem]:
    if path is None:
        return []
    documents = _documents(path, "status file")
    items = documents[0] if len(documents) == 1 and isinstance(documents[0], list) else documents
    try:
        return [AggregatedStatusItem.from_dict(item) for item in items]
    except ValueError as err:
        raise _InputError(f"status file {path}: {err}") from err


async def _interpreter(path: Path | None, directory: Path | None) -> Interpreter:
    extra = None
    if directory is not None:
        loaded = await load_customization_directory(directory)
        for error in loaded.errors:
            sys.stderr.write(f"error: {error} (skipped)\n")
        extra = loaded.customizations
    if path is None:
        if extra is None:
            return Interpreter()
        return Interpreter(thirdparty=thirdparty_backend(extra, bundled_customizations()))
    customizations = CustomizationSet()
    for obj in customizations_from_yaml(_read(path, "customization file")):
        await customizations.apply(obj)  # checks each script, as the controller would
    return Interpreter(customizations=customizations, thirdparty=extra, native=None)


def _subject(args: argparse.Namespace, operation: Operation) -> dict[str, Any]:
    desired = _object(args.desired_file, "desired file")
    observed = _object(args.observed_file, "observed file")
    first, second = (observed, desired) if operation in _OBSERVED_FIRST else (desired, observed)
    subject = first if first is not None else second
    if subject is None:
        raise _InputError(f"{operation} needs --desired-file or --observed-file")
    return subject


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    operation = Operation(args.operation)
    interpreter = await _interpreter(args.customization, args.interpreter_customizations)
    if operation is Operation.RETAIN:
        desired = _object(args.desired_file, "desired file")
        observed = _object(args.observed_file, "observed file")
        if desired is None or observed is None:
            raise _InputError("Retain needs --desired-file and --observed-file")
        return {"retained": await interpreter.retain(desired, observed)}
    obj = _subject(args, operation)
    if operation is Operation.INTERPRET_REPLICA:
        replica, requires = await interpreter.get_replicas(obj)
        return {"replica": replica, "requires": requires.to_dict() if requires else None}
    if operation is Operation.REVISE_REPLICA:
        if args.desired_replica is None:
            raise _InputError("ReviseReplica needs --desired-replica")
        return {"revised": await interpreter.revise_replica(obj, args.desired_replica)}
    if operation is Operation.AGGREGATE_STATUS:
        items = _status_items(args.status_file)
        return {"aggregatedStatus": await interpreter.aggregate_status(obj, items)}
    if operation is Operation.INTERPRET_STATUS:
        return {"status": await interpreter.reflect_status(obj)}
    if operation is Operation.INTERPRET_HEALTH:
        return {"healthy": await interpreter.interpret_health(obj)}
    if operation is Operation.INTERPRET_DEPENDENCY:
        dependencies = await interpreter.get_dependencies(obj)
        return {"dependencies": [d.to_dict() for d in dependencies]}
    components = await interpreter.get_components(obj)
    return {"components": [c.to_dict() for c in components]}


def _explain(err: NotSupported, customization: Path | None) -> str:
    target = f"{err.gvk.api_version} {err.gvk.kind}"
    if customization is None:
        return f"no built-in interpreter handles {err.operation} for {target}"
    field = RULE_FIELDS[err.operation]
    return (
        f"{customization} has no {err.operation} rule (spec.customizations.{field}) "
        f"targeting {target}"
    )


def _render(result: dict[str, Any], output: str) -> str:
    if output == "json":
        return json.dumps(result, indent=2) + "\n"
    return yaml.safe_dump(result, sort_keys=False, default_flow_style=False)


def _fail(message: str) -> int:
    # One line, whatever the error: scripts and people read the first line only.
    sys.stderr.write(f"error: {' '.join(message.split())}\n")
    return 1


def run_interpret(args: argparse.Namespace) -> int:
    """Run the parsed ``interpret`` command; prints the result, returns the exit status."""
    try:
        result = anyio.run(_run, args)
    except NotSupported as err:
        return _fail(_explain(err, args.customization))
    except (InterpreterError, _InputError, ValueError) as err:
        return _fail(str(err))
    except RecursionError:
        return _fail("an input is nested too deeply")
    sys.stdout.write(_render(result, args.output))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``reconcile interpret ...`` alone (``argv`` starts with ``interpret``); the exit status."""
    parser = argparse.ArgumentParser(prog="reconcile")
    add_interpret_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status
