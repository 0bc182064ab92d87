"""Build hook: what the wheel needs beyond the packages' own files.

``deploy/crds`` stays the one source of the Karmada CRDs (kubectl, kustomize and the chart read
it there); the wheel carries a copy as ``controllers/api/crds``, so that an installed reconcile
finds them without a checkout. ``controllers/COMMIT`` records the commit built from, for
``reconcile version``. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent


def _commit() -> str:
    """The commit of the checkout; in an unpacked sdist, the one it recorded."""
    recorded = ROOT / "controllers" / "COMMIT"
    if recorded.is_file():
        return recorded.read_text(encoding="utf-8").strip()
    try:
        found = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return found.stdout.strip()


class BuildPy(build_py):
    """build_py, plus the CRDs and the commit in the build tree."""

    def run(self) -> None:
        super().run()
        package = Path(self.build_lib) / "controllers"
        crds = package / "api" / "crds"
        crds.mkdir(parents=True, exist_ok=True)
        for crd in sorted((ROOT / "deploy" / "crds").glob("*.yaml")):
            shutil.copy2(crd, crds / crd.name)
        _record_commit(package)


class Sdist(sdist):
    """sdist, plus the commit (an sdist has no .git to ask)."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        _record_commit(Path(base_dir) / "controllers")


def _record_commit(package: Path) -> None:
    commit = _commit()
    if commit:
        (package / "COMMIT").write_text(commit + "\n", encoding="utf-8")


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
