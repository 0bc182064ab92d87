"""Build the controller-manager's OCI image offline: ``make image`` (issue #33).

No base image is pulled. mmdebstrap extracts a minimal Debian bookworm root (Python 3.11 and the
libraries its standard library links; no shell, no package manager, no compiler: the ``extract``
variant runs no maintainer scripts, so none is needed), pip installs the wheel built from this
checkout and its dependencies' manylinux wheels into it, and umoci assembles an OCI image layout
with the config the Deployment expects: user 65532, entrypoint ``reconcile``, nothing written to
the root file system. The result is an ``oci-archive`` (``podman load -i``, ``skopeo copy``).

The build is cached by content: the key hashes everything that goes into the image (this script,
the Debian package list, the project's sources and metadata); a second run with the same key
prints the cached image's name and size and builds nothing.

Usage: ``python deploy/image/build.py [--store DIR] [--mirror URL]``; prints ``image: NAME ARCHIVE
SIZE``. Air-gapped: ``--mirror`` a local Debian mirror (``file:///srv/debian``), and pip's own
settings for the wheels (``PIP_NO_INDEX=1 PIP_FIND_LINKS=/srv/wheelhouse``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
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
SOURCES: Final = ("reconcile", "controllers", "testenv", "deploy/crds")
METADATA: Final = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md")
DEFAULT_STORE: Final = (
    Path(os.environ.get("XDG_DATA_HOME", str(Path.home() / ".local" / "share")))
    / "reconcile"
    / "images"
)


def _run(*command: str | Path, cwd: Path | None = None) -> None:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(
            f"{' '.join(map(str, command))} failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )


def content_key() -> str:
    """What the image is made of, hashed: a change to any of it builds a new image."""
    digest = hashlib.sha256()
    digest.update(Path(__file__).read_bytes())
    digest.update(json.dumps([SUITE, PACKAGES, EXCLUDED, USER]).encode())
    files = [ROOT / name for name in METADATA]
    for source in SOURCES:
        files += sorted(p for p in (ROOT / source).rglob("*") if p.is_file() and _shipped(p))
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _shipped(path: Path) -> bool:
    return "__pycache__" not in path.parts and path.suffix != ".pyc"


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


def _install(rootfs: Path, directory: Path) -> None:
    dist = directory / "dist"
    _run(sys.executable, "-m", "build", "--wheel", "--outdir", dist, ROOT)
    (wheel,) = dist.glob("reconcile-*.whl")
    target = rootfs / SITE
    # Binary wheels for the image's Python, whatever runs this script.
    platform = ("--platform", "manylinux2014_x86_64", "--python-version", "3.11")
    _run(sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--only-binary=:all:",
         *platform, "--implementation", "cp", "--target", target, wheel)  # fmt: skip
    # The console script, without a shell: the kernel reads the interpreter from the first line.
    script = rootfs / "usr" / "bin" / "reconcile"
    script.write_text(
        f"#!{PYTHON}\nimport sys\nfrom controllers.cli import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    shutil.rmtree(target / "bin", ignore_errors=True)
    # Writable places a non-root process may need, owned by it (the root stays read-only).
    for place in ("tmp", "home/nonroot"):
        (rootfs / place).mkdir(parents=True, exist_ok=True)
    (rootfs / "tmp").chmod(0o1777)
    os.chown(rootfs / "home" / "nonroot", 65532, 65532)


def _assemble(rootfs: Path, directory: Path, name: str, archive: Path) -> None:
    layout = directory / "oci"
    _run("umoci", "init", "--layout", layout)
    image = f"{layout}:{name.partition(':')[2]}"
    _run("umoci", "new", "--image", image)
    bundle = directory / "bundle"
    _run("umoci", "unpack", "--image", image, bundle)
    shutil.rmtree(bundle / "rootfs")
    rootfs.rename(bundle / "rootfs")
    _run("umoci", "repack", "--image", image, bundle)
    _run("umoci", "config", "--image", image, "--config.user", USER,
         "--config.entrypoint", "/usr/bin/reconcile", "--config.workingdir", "/home/nonroot",
         "--config.env", "PYTHONDONTWRITEBYTECODE=1", "--config.env", "PYTHONUNBUFFERED=1",
         "--config.env", "HOME=/home/nonroot", "--author", "reconcile")  # fmt: skip
    _run("tar", "-C", layout, "-cf", archive, ".")


def build(store: Path, mirror: str | None = None) -> tuple[str, Path]:
    """The image's name and its oci-archive, built unless the store has it; ``mirror`` is the
    Debian mirror to take the packages from (default: the host's apt sources)."""
    name = f"reconcile:{metadata.version('reconcile')}"
    archive = store / f"reconcile-{content_key()}.oci.tar"
    if archive.is_file():
        return name, archive
    store.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=store) as scratch:
        directory = Path(scratch)
        rootfs = _rootfs(directory, mirror)
        _install(rootfs, directory)
        partial = directory / archive.name
        _assemble(rootfs, directory, name, partial)
        partial.rename(archive)
    return name, archive


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument(
        "--mirror", help="Debian mirror URL (e.g. a local one, air-gapped); default: apt sources"
    )
    args = parser.parse_args()
    name, archive = build(args.store, args.mirror)
    print(f"image: {name} {archive} {archive.stat().st_size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
