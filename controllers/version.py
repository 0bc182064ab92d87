"""Version says which reconcile this is: its version, the commit it was built from, the Python
running it and the Karmada API it speaks (``reconcile version``, like ``kubectl version``).

The version has one source, ``pyproject.toml``, read from the installed distribution's metadata.
The commit is written into the wheel at build time (``setup.py`` writes ``controllers/COMMIT``);
run from a checkout, it is asked of git; otherwise it is ``unknown``.
"""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Final, TypedDict

from controllers.api import KARMADA_RESOURCES

__all__ = ["KARMADA_VERSION", "VersionInfo", "version_info"]

KARMADA_VERSION: Final = "v1.16"
"""The Karmada release whose API (groups, kinds, fields, defaults) the CRDs and controllers
follow."""

_PACKAGE: Final = Path(__file__).resolve().parent
_COMMIT_FILE: Final = _PACKAGE / "COMMIT"


def _commit() -> str:
    if _COMMIT_FILE.is_file():
        return _COMMIT_FILE.read_text(encoding="utf-8").strip() or "unknown"
    try:
        found = subprocess.run(
            ["git", "-C", str(_PACKAGE.parent), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return found.stdout.strip() or "unknown"


def _version() -> str:
    try:
        return metadata.version("reconcile")
    except metadata.PackageNotFoundError:
        return "unknown"


class VersionInfo(TypedDict):
    """What ``reconcile version --output json`` prints (kubectl version's key style)."""

    version: str
    gitCommit: str
    pythonVersion: str
    karmadaVersion: str
    karmadaAPIVersions: list[str]


def version_info() -> VersionInfo:
    """This reconcile's version, commit, Python and Karmada API."""
    group_versions = sorted({resource.gvk.api_version for resource in KARMADA_RESOURCES})
    return {
        "version": _version(),
        "gitCommit": _commit(),
        "pythonVersion": platform.python_version(),
        "karmadaVersion": KARMADA_VERSION,
        "karmadaAPIVersions": group_versions,
    }
