"""Build the controller-manager's OCI image offline: ``make image`` (issue #33).

The builder is ``reconcile.scaffold.image``, which a scaffolded project's ``make image`` uses too.
No base image is pulled. mmdebstrap extracts a minimal Debian bookworm root (Python 3.11 and the
libraries its standard library links; no shell, no package manager, no compiler: the ``extract``
variant runs no maintainer scripts, so none is needed), pip installs the wheel built from this
checkout and its dependencies' manylinux wheels into it, and umoci assembles an OCI image layout
with the config the Deployment expects: user 65532, entrypoint ``reconcile``, nothing written to
the root file system. The result is an ``oci-archive`` (``podman load -i``, ``skopeo copy``).

The build is cached by content: the key hashes everything that goes into the image (the builder,
the Debian package list, the project's sources and metadata); a second run with the same key
prints the cached image's name and size and builds nothing.

Usage: ``python deploy/image/build.py [--store DIR] [--mirror URL]``; prints ``image: NAME ARCHIVE
SIZE``. Air-gapped: ``--mirror`` a local Debian mirror (``file:///srv/debian``), and pip's own
settings for the wheels (``PIP_NO_INDEX=1 PIP_FIND_LINKS=/srv/wheelhouse``).
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path
from typing import Final

from reconcile.scaffold.image import (
    DEFAULT_STORE,
    ImageError,
    ImageSpec,
    build_image,
    project_files,
)

ROOT: Final = Path(__file__).resolve().parents[2]
SOURCES: Final = ("reconcile", "controllers", "testenv", "deploy/crds")
METADATA: Final = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md")


def spec() -> ImageSpec:
    """This checkout's controller-manager: the wheel of its packages, entrypoint ``reconcile``
    (the Deployment gives the arguments)."""
    return ImageSpec(
        name=f"reconcile:{metadata.version('reconcile')}",
        projects=(ROOT,),
        key_files=tuple(project_files(ROOT, [*METADATA, *SOURCES])),
    )


def build(store: Path, mirror: str | None = None) -> tuple[str, Path]:
    """The image's name and its oci-archive, built unless the store has it."""
    image = spec()
    return image.name, build_image(image, store, mirror)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument(
        "--mirror", help="Debian mirror URL (e.g. a local one, air-gapped); default: apt sources"
    )
    args = parser.parse_args()
    try:
        name, archive = build(args.store, args.mirror)
    except ImageError as error:
        sys.exit(str(error))
    print(f"image: {name} {archive} {archive.stat().st_size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
