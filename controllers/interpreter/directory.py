"""Directory loads third-party ResourceInterpreterCustomizations from a directory of YAML files.

Karmada's third-party customizations (its resourcecustomizations tree, one
``<group>/<version>/<Kind>/customizations.yaml`` per kind) are ordinary
ResourceInterpreterCustomization objects, so such a tree, or any directory of such files, loads
unchanged: ``load_customization_directory`` reads every ``*.yaml``, ``*.yml`` and ``*.json`` file
below it (``testdata`` directories, where Karmada keeps test inputs, are skipped) and applies each
customization document, checking its scripts in a worker as the controllers do. A file that
cannot be read, is not YAML or holds no customization, and a customization that is malformed or
whose script does not load, is one line in ``errors`` naming the file; the rest still load.

``thirdparty_backend`` puts such a set in front of the bundled customizations: for the kinds and
operations it handles it answers, the bundled ones answer the rest. The controller-manager and
``reconcile interpret`` take the directory as ``--interpreter-customizations DIR``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from controllers.interpreter.backend import Backend
from controllers.interpreter.customization import CustomizationSet, customizations_from_yaml
from controllers.interpreter.types import (
    InterpreterError,
)

__all__ = ["SUFFIXES", "DirectoryLoad", "load_customization_directory", "thirdparty_backend"]

SUFFIXES: Final = (".yaml", ".yml", ".json")
"""The file names read from a customization directory."""

_SKIPPED_DIRECTORIES: Final = frozenset({"testdata"})

Obj = dict[str, Any]


@dataclass(frozen=True)
class DirectoryLoad:
    """What a directory gave: the customizations that loaded, and one line per failure."""

    customizations: CustomizationSet
    errors: tuple[str, ...]


def _files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).parts
        if _SKIPPED_DIRECTORIES.intersection(relative[:-1]):
            continue
        if path.suffix in SUFFIXES and path.is_file():
            yield path


async def _load_file(path: Path, into: CustomizationSet) -> list[str]:
    """Apply the customizations of one file; the problems found, one line each."""
    try:
        text = path.read_text(encoding="utf-8")  # noqa: ASYNC240 - small files, loaded once
        documents = customizations_from_yaml(text)
    except (OSError, UnicodeDecodeError) as err:
        return [f"{path}: cannot read it: {getattr(err, 'strerror', None) or err}"]
    except InterpreterError as err:
        return [f"{path}: {err}"]
    errors = []
    for document in documents:
        try:
            await into.apply(document)
        except InterpreterError as err:
            errors.append(f"{path}: {' '.join(str(err).split())}")
    return errors


async def load_customization_directory(
    directory: Path | str, *, into: CustomizationSet | None = None
) -> DirectoryLoad:
    """Load every customization file below ``directory``; failures are reported, not raised.

    ``into`` (default: a new set) receives them, so its time and memory limits apply.

    Raises:
        InterpreterError: ``directory`` is not a directory.
    """
    root = Path(directory)
    if not root.is_dir():  # noqa: ASYNC240 - one stat, at start-up
        raise InterpreterError(f"interpreter customizations: {root} is not a directory")
    customizations = into if into is not None else CustomizationSet()
    errors: list[str] = []
    for path in _files(root):
        errors.extend(await _load_file(path, customizations))
    return DirectoryLoad(customizations, tuple(errors))


def thirdparty_backend(first: CustomizationSet, then: Backend | None) -> tuple[Backend, ...]:
    """The third-party sources of an ``Interpreter``: ``first`` where it handles a kind and
    operation, else ``then``."""
    return (first,) if then is None else (first, then)
