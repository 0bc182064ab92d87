"""`reconcile gen types` against the real kube-apiserver: regenerating gives the committed files."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

import reconcile.api
from reconcile import Client
from reconcile.gen.openapi import OpenAPIError, fetch_openapi
from reconcile.gen.types import generate_types
from testenv import ControlPlane

pytestmark = pytest.mark.asyncio(loop_scope="session")

API = Path(reconcile.api.__file__).parent


def _tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*.py"))
        if path.parent != root  # reconcile/api/__init__.py is written by hand
    }


async def test_regenerating_gives_the_committed_modules(client: Client, tmp_path: Path) -> None:
    written = await generate_types(client, tmp_path)
    assert len(written) == len(_tree(tmp_path))
    regenerated, committed = _tree(tmp_path), _tree(API)
    assert sorted(regenerated) == sorted(committed), "a module was added or is gone: regenerate"
    stale = [name for name in committed if committed[name] != regenerated[name]]
    assert stale == [], "run `reconcile gen types` and commit the result"


async def test_the_command_writes_the_modules_from_a_kubeconfig(
    host: ControlPlane, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "controllers.cli", "gen", "types", "--output", str(tmp_path)]
    done = await anyio.run_process([*command, "--kubeconfig", str(host.kubeconfig)], check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert b"wrote 25 files" in done.stdout
    apps = (tmp_path / "apps" / "v1.py").read_text(encoding="utf-8")
    assert apps == (API / "apps" / "v1.py").read_text(encoding="utf-8")


async def test_a_group_version_the_apiserver_does_not_serve_is_a_clear_error(
    client: Client,
) -> None:
    missing = r"no OpenAPI v3 document for apis/nope\.example\.com/v1"
    with pytest.raises(OpenAPIError, match=missing):
        await fetch_openapi(client, ["api/v1", "apis/nope.example.com/v1"])


async def test_an_unreachable_cluster_is_reported_by_the_command(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "missing.kubeconfig"
    command = [sys.executable, "-m", "controllers.cli", "gen", "types", "--output", str(tmp_path)]
    done = await anyio.run_process([*command, "--kubeconfig", str(kubeconfig)], check=False)
    assert done.returncode == 1
    assert done.stderr.decode().startswith("gen types: ")
    assert list(tmp_path.iterdir()) == []


async def test_without_a_kubeconfig_the_command_starts_a_testenv_of_its_own(
    tmp_path: Path,
) -> None:
    command = [sys.executable, "-m", "controllers.cli", "gen", "types", "--output", str(tmp_path)]
    done = await anyio.run_process(command, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert _tree(tmp_path) == _tree(API)
