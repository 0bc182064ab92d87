"""mypy sees ``reconcile`` from outside the checkout (issue #28): the Makefile installs this
checkout in compat editable mode, a path in a .pth file, which type checkers follow; setuptools'
default import hook is invisible to them, so a user's project type-checked as untyped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BAD = """from reconcile import GVK

POD = GVK("", "v1", "Pod")
kind: int = POD.kind
"""


def test_mypy_checks_code_using_reconcile_outside_the_checkout(tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text(BAD)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "import-not-found" not in done.stdout, done.stdout
    assert 'expression has type "str", variable has type "int"' in done.stdout, done.stdout
