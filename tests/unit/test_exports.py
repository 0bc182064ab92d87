"""Every package re-exports a sorted, complete ``__all__`` of its public names."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

PACKAGES = ["reconcile", "controllers", "testenv"]


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_sorted_and_resolvable(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(module.__all__)
    assert exported == sorted(exported)
    for name in exported:
        assert hasattr(module, name), f"{package}.{name} is exported but missing"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_declares_all(package: str) -> None:
    root = importlib.import_module(package)
    for info in pkgutil.iter_modules(root.__path__):
        module = importlib.import_module(f"{package}.{info.name}")
        assert hasattr(module, "__all__"), f"{module.__name__} has no __all__"
        assert module.__doc__, f"{module.__name__} has no docstring"


def test_reconcile_never_imports_controllers_or_testenv() -> None:
    root = importlib.import_module("reconcile")
    for info in pkgutil.walk_packages(root.__path__, "reconcile."):
        source = importlib.import_module(info.name).__file__
        assert source is not None
        text = Path(source).read_text()
        for forbidden in ("controllers", "testenv"):
            assert f"import {forbidden}" not in text
            assert f"from {forbidden}" not in text
