"""reconcile is a controller-runtime style framework for Kubernetes controllers in Python.

Write a Reconciler (``async def reconcile(request) -> Result | None``), wire it with
``controller_managed_by(manager).for_(GVK(...)).owns(...).complete(reconciler)`` and run the
Manager. The framework's public names are all importable from here; each concept lives in a
module or package named after it (workqueue, cache, client, controller, builder, manager, ...):
see docs/architecture.md for the flow from the watch socket to the reconcile call.

The names are loaded on first use (PEP 562's module ``__getattr__``), so importing one light
module (``reconcile.gvk``, ``reconcile.quantity``) or one name does not import the framework.
``__init__.pyi`` lists them, each with the module it comes from: type checkers read it as this
package's interface, and ``__getattr__`` reads the same list, so the two cannot disagree.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any, Final

__version__ = "0.1.0"


def _exports() -> dict[str, tuple[str, str]]:
    # name -> (module, name there), from the stub's `from module import name as name` lines.
    stub = ast.parse((Path(__file__).parent / "__init__.pyi").read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: (node.module or "", alias.name)
        for node in stub.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


_EXPORTS: Final = _exports()

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import the module that defines ``name`` and keep the name here for the next lookup."""
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'reconcile' has no attribute {name!r}") from None
    # A submodule listed as a name (`from reconcile import predicate`) is imported as one:
    # looking it up as an attribute of this package would come back here.
    value = (
        importlib.import_module(f"{__name__}.{attribute}")
        if module == __name__
        else getattr(importlib.import_module(module), attribute)
    )
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
