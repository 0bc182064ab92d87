"""End to end: the wheel stands alone (issue #33).

``python -m build`` makes the sdist and the wheel (the wheel from the sdist, as a user's pip
would); installed into a fresh virtualenv, outside any checkout, ``reconcile version`` names this
commit, the Karmada CRDs come from the package, ``reconcile testenv install`` and ``reconcile
demo`` work, and a user's test using testenv's pytest plugin runs against a real apiserver.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from controllers.api import KARMADA_RESOURCES

ROOT = Path(__file__).resolve().parents[2]
USER_TEST = """
import pytest

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_the_plugin_gives_a_namespace_on_a_real_apiserver(host, namespace):
    assert host.kubeconfig.is_file()
    assert namespace.startswith("test-")
"""
USER_INI = """[pytest]
asyncio_mode = strict
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
"""


def _run(command: list[str], cwd: Path, timeout: float = 600) -> str:
    """Run ``command`` in ``cwd`` (never the checkout); its output, or a failure with it."""
    # PYTHONPATH would let the checkout in through the back door.
    # MAKEFLAGS/MAKELEVEL: under `make test`, a project's own make must not inherit ours.
    hidden = ("PYTHONPATH", "VIRTUAL_ENV", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{output[-4000:]}"
    return output


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv with the wheel built from this checkout (and its ``test`` extra); its bin
    directory."""
    work = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "build", "--outdir", str(work / "dist"), str(ROOT)], work)
    (wheel,) = (work / "dist").glob("reconcile-*.whl")
    assert list((work / "dist").glob("reconcile-*.tar.gz")), "no sdist"
    _run([sys.executable, "-m", "venv", str(work / "venv")], work)
    bin_dir = work / "venv" / "bin"
    _run([str(bin_dir / "pip"), "install", "-q", f"{wheel}[test]"], work)
    return bin_dir


def test_version_names_this_release_and_commit(fresh: Path) -> None:
    info = json.loads(_run([str(fresh / "reconcile"), "version", "-o", "json"], fresh))
    head = _run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], fresh).strip()
    assert info["version"] == metadata.version("reconcile")
    assert info["gitCommit"] == head
    assert info["karmadaAPIVersions"] == sorted({r.gvk.api_version for r in KARMADA_RESOURCES})
    text = _run([str(fresh / "reconcile"), "version"], fresh)
    assert text.startswith(f"reconcile {info['version']} (commit {head})")


def test_the_crds_come_from_the_package(fresh: Path) -> None:
    script = "from controllers.api import crd_paths; print('\\n'.join(map(str, crd_paths())))"
    paths = _run([str(fresh / "python"), "-c", script], fresh).split()
    assert len(paths) == len(KARMADA_RESOURCES)
    assert all(path.startswith(str(fresh.parent)) for path in paths), paths


def test_testenv_install_and_the_demo_run_from_the_wheel(fresh: Path) -> None:
    _run([str(fresh / "reconcile"), "testenv", "install", "--quiet"], fresh)
    output = _run([str(fresh / "reconcile"), "demo"], fresh)
    assert "nginx is divided 2:1 across the members" in output, output[-2000:]


def test_a_users_test_runs_with_the_testenv_plugin(fresh: Path, tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TEST)
    (tmp_path / "pytest.ini").write_text(USER_INI)
    output = _run([str(fresh / "python"), "-m", "pytest", "-p", "testenv", "-q"], tmp_path)
    assert "1 passed" in output, output[-2000:]


def test_a_scaffolded_project_passes_its_own_make_test(fresh: Path, tmp_path: Path) -> None:
    # Issue #28: `reconcile init` + `create api`, then the project's own `make test` (its own
    # virtualenv with reconcile from this wheel, lint, generated CRD and RBAC, tests on testenv).
    project = tmp_path / "guestbook"
    project.mkdir()
    reconcile = str(fresh / "reconcile")
    _run([reconcile, "init", "--domain", "example.com", "--repo", "guestbook-operator"], project)
    api = ["create", "api", "--group", "webapp", "--version", "v1", "--kind", "Guestbook"]
    _run([reconcile, *api], project)
    assert "reconcile-" in (project / "Makefile").read_text(), "RECONCILE is not this wheel"
    output = _run(["make", "test"], project, timeout=1200)
    assert "2 passed" in output, output[-3000:]
    crd = project / "config" / "crd" / "webapp.example.com_guestbooks.yaml"
    assert crd.is_file(), sorted(p.name for p in (project / "config" / "crd").iterdir())
    assert list((project / "config" / "rbac").glob("*.yaml"))
    # make image: the project and reconcile (this wheel) in an OCI image running its controllers.
    line = _run(["make", "image"], project, timeout=1200).strip().splitlines()[-1]
    _, name, archive, _ = line.split(" ", 3)
    assert name == "guestbook-operator:0.1.0", line
    config = _image_config(Path(archive), tmp_path / "layout")
    assert config["Entrypoint"] == ["/usr/bin/reconcile"]
    assert config["Cmd"] == ["run", "guestbook_operator.controllers:setup"]
    assert config["User"] == "65532:65532"
    listing = _run(["tar", "-tf", str(tmp_path / "layout" / "layer.tar")], tmp_path)
    assert "guestbook_operator/controllers/guestbook.py" in listing
    assert "reconcile/scaffold/image.py" in listing


def _image_config(archive: Path, layout: Path) -> dict[str, Any]:
    """The image config of an oci-archive with one image, and its one layer as layer.tar."""
    layout.mkdir()
    _run(["tar", "-xf", str(archive), "-C", str(layout)], layout)
    blobs = layout / "blobs" / "sha256"

    def blob(digest: str) -> Any:
        return blobs / digest.removeprefix("sha256:")

    (entry,) = json.loads((layout / "index.json").read_text())["manifests"]
    manifest = json.loads(blob(entry["digest"]).read_text())
    (layer,) = manifest["layers"]
    _run(["sh", "-c", f"gzip -dc {blob(layer['digest'])} > {layout / 'layer.tar'}"], layout)
    config: dict[str, Any] = json.loads(blob(manifest["config"]["digest"]).read_text())["config"]
    return config
