"""Render fills a folder of templates into a project: ``{{name}}`` in paths and contents.

Templates are the files as they will be, with ``{{name}}`` placeholders and a ``.tmpl`` suffix
(so no tool takes them for the project's own code). A placeholder without a value is an error,
never an empty string: a scaffold that silently writes ``class (…)`` is worse than none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

__all__ = ["ScaffoldError", "render", "render_tree"]

SUFFIX = ".tmpl"
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


class ScaffoldError(Exception):
    """The scaffold cannot be written as asked (a bad name, a file in the way, no project)."""


def render(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{{name}}`` replaced by ``values[name]``.

    Raises:
        ScaffoldError: a placeholder has no value.
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise ScaffoldError(f"template placeholder {{{{{name}}}}} has no value")
        return values[name]

    return PLACEHOLDER.sub(value, text)


def _templates(folder: str) -> Traversable:
    return resources.files("reconcile.scaffold") / "templates" / folder


def _walk(node: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        path = f"{prefix}{child.name}"
        if child.is_dir():
            yield from _walk(child, path + "/")
        elif child.name.endswith(SUFFIX):
            yield path.removesuffix(SUFFIX), child


def render_tree(
    folder: str, target: Path, values: Mapping[str, str], *, keep: frozenset[str] = frozenset()
) -> list[Path]:
    """Write the templates of ``folder`` under ``target``; returns the files written.

    A file in ``keep`` (relative paths) is written only if missing; if any other exists, nothing
    is written at all, so a scaffold never half-replaces a user's work.

    Raises:
        ScaffoldError: a file is in the way, or a placeholder has no value.
    """
    planned = [
        (path, node)
        for path, node in ((target / render(p, values), n) for p, n in _walk(_templates(folder)))
        if not (path.exists() and str(path.relative_to(target)) in keep)
    ]
    blocked = [str(path.relative_to(target)) for path, _ in planned if path.exists()]
    if blocked:
        raise ScaffoldError(f"would overwrite {', '.join(blocked)}; nothing was written")
    texts = [(path, render(node.read_text(encoding="utf-8"), values)) for path, node in planned]
    for path, text in texts:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return [path for path, _ in texts]
