"""The API reference builds from the docstrings, without a warning, and documents every export.

``make docs`` runs pdoc on the modules its ``API_MODULES`` names; this test runs the same command
into a temporary directory, so a docstring or an ``__all__`` that pdoc cannot read fails
``make test``, and checks that the lazy front door's names (``reconcile/__init__.pyi``) and
testenv's reach the pages.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import reconcile
import testenv

ROOT = Path(__file__).parents[2]


def api_modules() -> list[str]:
    """The modules ``make docs`` documents, from the Makefile's ``API_MODULES``."""
    found = re.search(r"^API_MODULES := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert found, "the Makefile has no API_MODULES line"
    return found.group(1).split()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("api")
    command = [sys.executable, "-W", "always", "-m", "pdoc", "--docformat", "google"]
    # cwd: `python -m` puts the checkout first on the path, so its packages are documented.
    done = subprocess.run(
        [*command, "--output-directory", str(output), *api_modules()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", f"pdoc warned:\n{done.stderr}"
    return output


def anchors(page: Path) -> set[str]:
    return set(re.findall(r'<section id="([^"]+)">', page.read_text(encoding="utf-8")))


def test_every_name_of_the_front_door_is_documented(reference: Path) -> None:
    documented = anchors(reference / "reconcile.html")
    submodules = {"predicate", "markers"}  # each a page of its own
    missing = set(reconcile.__all__) - submodules - documented
    assert not missing, f"exported but not in the reference: {sorted(missing)}"
    assert {"Manager", "Builder", "Client", "CachedClient", "Request", "Result"} <= documented
    for page in submodules:
        assert (reference / "reconcile" / f"{page}.html").is_file()


def test_testenv_and_its_fixtures_are_documented(reference: Path) -> None:
    documented = anchors(reference / "testenv.html")
    missing = set(testenv.__all__) - {"eventually"} - documented  # a page of its own
    assert not missing, f"exported but not in the reference: {sorted(missing)}"
    assert {"ControlPlane", "Environment", "WebhookInstallOptions", "manager_for"} <= documented
    assert (reference / "testenv" / "eventually.html").is_file()
    fixtures = anchors(reference / "testenv" / "plugin.html")
    assert {"host", "namespace", "manager", "webhooks"} <= fixtures


def test_the_webhook_package_is_documented_with_its_docstrings(reference: Path) -> None:
    page = reference / "reconcile" / "webhook.html"
    assert {"CustomDefaulter", "CustomValidator", "Convertible", "mutate_path"} <= anchors(page)
    assert "Sets defaults on objects of one kind." in page.read_text(encoding="utf-8")
