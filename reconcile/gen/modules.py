"""Modules imports what a generator is pointed at: the user's modules, by name or file.

``import_module`` takes a module name (the current directory importable, as for ``python -m``)
or a path to a ``.py`` file; ``import_modules`` also every module under a package, as
controller-gen's ``paths=./...``. A module that fails to run is an ``ImportError`` naming it and
the reason, so each generator reports bad input the same way (exit 2), never with a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["import_module", "import_modules"]


def import_module(target: str) -> ModuleType:
    """The module ``target`` names (``pkg.mod`` or ``path/to/file.py``).

    Raises:
        ImportError: it is not there, or running it raised (the message says what).
    """
    try:
        return _import(target)
    except ImportError:
        raise
    except Exception as error:  # the user's module failed to run: say which and why
        raise ImportError(f"{target} does not import: {type(error).__name__}: {error}") from error


def import_modules(target: str) -> list[ModuleType]:
    """The module ``target`` names and, for a package, every module under it (sorted).

    Raises:
        ImportError: as ``import_module``, for any of them.
    """
    module = import_module(target)
    # A scaffolded project's kinds live in PACKAGE/api/VERSION/KIND.py, none imported by the
    # package itself: `gen crd PACKAGE.api` finds them all, in a stable (sorted) order.
    paths = getattr(module, "__path__", None)
    if paths is None:
        return [module]
    names = sorted(info.name for info in pkgutil.walk_packages(paths, module.__name__ + "."))
    return [module, *(import_module(name) for name in names)]


def _import(target: str) -> ModuleType:
    if target.endswith(".py"):
        path = Path(target)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None or not path.is_file():
            raise ImportError(f"no such Python file: {target}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses and get_type_hints look the module up
        spec.loader.exec_module(module)
        return module
    if os.getcwd() not in sys.path:  # as `python -m`: ./mycontroller.py is importable
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(target)
