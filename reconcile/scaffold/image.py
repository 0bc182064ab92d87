"""Image builds a controller's OCI image offline: reconcile's own and a scaffolded project's.

No base image is pulled. mmdebstrap extracts a minimal Debian bookworm root (Python 3.11 and the
libraries its standard library links; no shell, no package manager, no compiler: the ``extract``
variant runs no maintainer scripts, so none is needed), pip installs wheels built from the given
projects and their dependencies' manylinux wheels into it, and umoci assembles an OCI image layout
with what a Deployment's restricted security context expects: user 65532, the ``reconcile``
command as entrypoint (with the arguments given, e.g. ``run PACKAGE.controllers:setup``), nothing
written to the root file system. The result is an ``oci-archive`` (``podman load -i``, ``skopeo
copy``).

The build is cached by content: the key hashes everything that goes into the image (this module,
the Debian package list, the entrypoint, and the files the spec names); a second run with the same
key returns the cached archive and builds nothing. Air-gapped: a ``mirror`` (a local Debian mirror,
``file:///srv/debian``), and pip's own settings for the wheels (``PIP_NO_INDEX=1
PIP_FIND_LINKS=/srv/wheelhouse``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_STORE", "ImageError", "ImageSpec", "build_image", "project_files"]

SUITE: Final = "bookworm"
PACKAGES: Final = ("python3.11-minimal", "libpython3.11-stdlib")
"""Python and its standard library's shared libraries (ssl, ctypes, sqlite3, ...), nothing else."""
EXCLUDED: Final = (
    "/usr/share/doc/*",
    "/usr/share/man/*",
    "/usr/share/locale/*",
    "/usr/share/info/*",
)
USER: Final = "65532:65532"
PYTHON: Final = "/usr/bin/python3.11"
SITE: Final = "usr/lib/python3/dist-packages"
STEP_TIMEOUT: Final = 1800.0
"""Seconds one step (mmdebstrap, pip, umoci) may take: a mirror or index that stalls ends the
build with an error instead of holding it forever (subprocess kills the step)."""
CONSOLE_SCRIPT: Final = ("controllers.cli", "main")
"""The ``reconcile`` command (pyproject's ``[project.scripts]``): written into the image, never
imported here."""
DEFAULT_STORE: Final = (
    Path(os.environ.get("XDG_DATA_HOME", str(Path.home() / ".local" / "share")))
    / "reconcile"
    / "images"
)
_NOT_SHIPPED: Final = frozenset(
    {".venv", ".git", "__pycache__", ".testenv", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)
_NOT_SHIPPED_DIRS: Final = ("build", "dist")


class ImageError(Exception):
    """A step of the build failed; the message names the command and ends with its output."""


@dataclass(frozen=True)
class ImageSpec:
    """What goes into an image."""

    name: str
    """``repository:tag``, recorded in the layout."""
    projects: tuple[Path, ...]
    """Source trees (with a pyproject.toml) built into wheels and installed, with their
    dependencies."""
    wheels: tuple[Path, ...] = ()
    """Wheels installed as they are (e.g. reconcile's own, when not built from a checkout)."""
    requirements: tuple[str, ...] = ()
    """Requirements pip finds on its index (e.g. ``reconcile==0.1.0``)."""
    arguments: tuple[str, ...] = ()
    """What follows ``reconcile`` in the entrypoint (none: the command's own help)."""
    key_files: tuple[Path, ...] = ()
    """The files whose content makes the cache key (``project_files`` of each project)."""


def project_files(root: Path, only: Iterable[str] = ()) -> list[Path]:
    """The files of a project that can end up in its wheel: under ``only`` (relative paths) if
    given, else everything but virtualenvs, caches, VCS data and build outputs; sorted."""
    tops = [root / name for name in only] if only else [root]
    found: list[Path] = []
    for top in tops:
        found += [top] if top.is_file() else list(_walk(top, root))
    return sorted(found)


def _walk(top: Path, root: Path) -> Iterator[Path]:
    for path in top.rglob("*"):
        parts = path.relative_to(root).parts
        skipped = _NOT_SHIPPED.intersection(parts) or parts[0] in _NOT_SHIPPED_DIRS
        if path.is_file() and not skipped and path.suffix != ".pyc":
            yield path


def content_key(spec: ImageSpec) -> str:
    """What the image is made of, hashed: a change to any of it builds a new image."""
    digest = hashlib.sha256()
    digest.update(Path(__file__).read_bytes())
    settings = [SUITE, PACKAGES, EXCLUDED, USER, spec.arguments, spec.requirements]
    digest.update(json.dumps(settings).encode())
    for path in [*spec.key_files, *spec.wheels]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def build_image(spec: ImageSpec, store: Path = DEFAULT_STORE, mirror: str | None = None) -> Path:
    """The image's oci-archive, built unless the store has it; ``mirror`` is the Debian mirror
    to take the packages from (default: the host's apt sources).

    Raises:
        ImageError: mmdebstrap, pip or umoci failed (or is missing).
    """
    repository = spec.name.partition(":")[0]
    archive = store / f"{repository}-{content_key(spec)}.oci.tar"
    if archive.is_file():
        return archive
    store.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=store) as scratch:
        directory = Path(scratch)
        rootfs = _rootfs(directory, mirror)
        _install(rootfs, directory, spec)
        partial = directory / archive.name
        _assemble(rootfs, directory, spec, partial)
        partial.rename(archive)
    return archive


def _run(*command: str | Path, cwd: Path | None = None) -> None:
    try:
        done = subprocess.run(
            [str(c) for c in command],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
            timeout=STEP_TIMEOUT,
        )
    except FileNotFoundError as error:
        raise ImageError(f"{command[0]} is not installed: {error}") from None
    except subprocess.TimeoutExpired:
        raise ImageError(f"{command[0]} took more than {STEP_TIMEOUT:.0f} s; stopped") from None
    if done.returncode != 0:
        shown = " ".join(map(str, command))
        raise ImageError(f"{shown} failed ({done.returncode}):\n{done.stderr[-3000:]}")


def _rootfs(directory: Path, mirror: str | None) -> Path:
    tarball = directory / "rootfs.tar"
    excludes = [f"--dpkgopt=path-exclude={pattern}" for pattern in EXCLUDED]
    include = "--include=" + ",".join(PACKAGES)
    # No mirror: mmdebstrap takes the host's apt sources.
    mirrors = [mirror] if mirror else []
    _run("mmdebstrap", "--quiet", "--variant=extract", include, *excludes, SUITE, tarball, *mirrors)
    rootfs = directory / "rootfs"
    rootfs.mkdir()
    _run("tar", "-xf", tarball, "-C", rootfs)
    tarball.unlink()
    return rootfs


def _wheels(spec: ImageSpec, directory: Path) -> list[Path]:
    dist = directory / "dist"
    for project in spec.projects:  # pip, not build: a project's venv need not have build
        _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", dist, project)
    return [*spec.wheels, *sorted(dist.glob("*.whl"))]


def _install(rootfs: Path, directory: Path, spec: ImageSpec) -> None:
    target = rootfs / SITE
    # Binary wheels for the image's Python, whatever runs this build.
    platform = ("--platform", "manylinux2014_x86_64", "--python-version", "3.11")
    _run(sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--only-binary=:all:",
         *platform, "--implementation", "cp", "--target", target,
         *_wheels(spec, directory), *spec.requirements)  # fmt: skip
    # The console script, without a shell: the kernel reads the interpreter from the first line.
    script = rootfs / "usr" / "bin" / "reconcile"
    module, function = CONSOLE_SCRIPT
    script.write_text(
        f"#!{PYTHON}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n"
    )
    script.chmod(0o755)
    shutil.rmtree(target / "bin", ignore_errors=True)
    # Writable places a non-root process may need, owned by it (the root stays read-only).
    for place in ("tmp", "home/nonroot"):
        (rootfs / place).mkdir(parents=True, exist_ok=True)
    (rootfs / "tmp").chmod(0o1777)
    os.chown(rootfs / "home" / "nonroot", 65532, 65532)


def _assemble(rootfs: Path, directory: Path, spec: ImageSpec, archive: Path) -> None:
    layout = directory / "oci"
    _run("umoci", "init", "--layout", layout)
    image = f"{layout}:{spec.name.partition(':')[2] or 'latest'}"
    _run("umoci", "new", "--image", image)
    bundle = directory / "bundle"
    _run("umoci", "unpack", "--image", image, bundle)
    shutil.rmtree(bundle / "rootfs")
    rootfs.rename(bundle / "rootfs")
    _run("umoci", "repack", "--image", image, bundle)
    arguments = [f"--config.cmd={argument}" for argument in spec.arguments]
    _run("umoci", "config", "--image", image, "--config.user", USER,
         "--config.entrypoint", "/usr/bin/reconcile", *arguments,
         "--config.workingdir", "/home/nonroot",
         "--config.env", "PYTHONDONTWRITEBYTECODE=1", "--config.env", "PYTHONUNBUFFERED=1",
         "--config.env", "HOME=/home/nonroot", "--author", "reconcile")  # fmt: skip
    _run("tar", "-C", layout, "-cf", archive, ".")
