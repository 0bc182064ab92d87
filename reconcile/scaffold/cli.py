"""The scaffold's commands: ``reconcile init``, ``reconcile create api`` (kubebuilder's) and
``reconcile image`` (a project's OCI image)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from reconcile.scaffold.image import DEFAULT_STORE, ImageError, build_image
from reconcile.scaffold.render import ScaffoldError
from reconcile.scaffold.scaffold import create_api, image_spec, init_project

__all__ = ["add_scaffold_parsers"]


def add_scaffold_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``init`` and ``create api`` on the ``reconcile`` command line."""
    init = commands.add_parser("init", help="start a project of your own controllers")
    init.add_argument("--domain", required=True, help="API groups are GROUP.DOMAIN, e.g. my.org")
    init.add_argument("--repo", required=True, help="the project's name, e.g. guestbook-operator")
    init.add_argument("--dir", type=Path, default=Path(), help="where (default: here)")
    init.set_defaults(func=_init)

    create = commands.add_parser("create", help="add to a project made by `reconcile init`")
    what = create.add_subparsers(dest="create_command", required=True)
    api = what.add_parser("api", help="a kind: its types, CRD, controller and tests")
    api.add_argument("--group", required=True, help="e.g. webapp (served as webapp.DOMAIN)")
    api.add_argument("--version", required=True, help="e.g. v1, v1beta1")
    api.add_argument("--kind", required=True, help="UpperCamelCase, e.g. Guestbook")
    api.add_argument(
        "--cluster-scoped", action="store_true", help="cluster-scoped (default: namespaced)"
    )
    api.add_argument("--dir", type=Path, default=Path(), help="the project (default: here)")
    api.set_defaults(func=_create_api)

    image = commands.add_parser("image", help="the OCI image of a project made by reconcile init")
    image.add_argument("--dir", type=Path, default=Path(), help="the project (default: here)")
    image.add_argument("--store", type=Path, default=DEFAULT_STORE, help="where images are kept")
    image.add_argument("--mirror", help="Debian mirror URL (default: the host's apt sources)")
    image.set_defaults(func=_image)


def _init(args: argparse.Namespace) -> int:
    written = _report(lambda: init_project(args.dir, domain=args.domain, repo=args.repo), args.dir)
    if not written:
        print("next: reconcile create api --group GROUP --version v1 --kind KIND")
    return written


def _create_api(args: argparse.Namespace) -> int:
    def run() -> list[Path]:
        return create_api(
            args.dir,
            group=args.group,
            version=args.version,
            kind=args.kind,
            namespaced=not args.cluster_scoped,
        )

    written = _report(run, args.dir)
    if not written:
        print("next: make test  (lint, manifests, then the tests against a real kube-apiserver)")
    return written


def _image(args: argparse.Namespace) -> int:
    try:
        spec = image_spec(args.dir)
        archive = build_image(spec, args.store, args.mirror)
    except (ScaffoldError, ImageError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"image: {spec.name} {archive} {archive.stat().st_size / 2**20:.1f} MiB")
    return 0


def _report(run: Callable[[], list[Path]], root: Path) -> int:
    try:
        written = run()
    except ScaffoldError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(path.relative_to(root) if path.is_relative_to(root) else path)
    return 0
