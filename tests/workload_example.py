"""The seed's Workload webhook example (examples/workload-interpreter), loaded for tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

__all__ = ["EXAMPLE", "SERVER"]

EXAMPLE = Path(__file__).parents[1] / "examples" / "workload-interpreter"


def _load_server() -> ModuleType:
    # The directory name has a dash: not a package, so load the file itself.
    spec = importlib.util.spec_from_file_location(
        "workload_interpreter_server", EXAMPLE / "server.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SERVER = _load_server()
"""examples/workload-interpreter/server.py, loaded once."""
