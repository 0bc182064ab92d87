"""The front door of ``reconcile``: light, loaded on use; what the docs import resolves."""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import reconcile

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IMPORT = re.compile(r"^[ \t]*from reconcile(?:\.[\w.]+)? import (?:\([^)]*\)|[^\n]*)", re.M)
# Not after a "/": `myproject/controllers/x.py` is a path of another project, not of this tree.
SOURCE_PATH = re.compile(
    r"(?<![\w/.-])(?:reconcile|controllers|testenv|bench|tests|deploy)/[\w./-]+\.(?:py|yaml|md)\b"
)

PROBE = """
import json, sys
import reconcile, reconcile.gvk, reconcile.quantity
from reconcile import GVK, Quantity
print(json.dumps(sorted(sys.modules)))
"""


def test_importing_light_names_imports_nothing_heavy() -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-c", PROBE], capture_output=True, check=True, timeout=60
    )
    modules = json.loads(done.stdout)
    ours = {m for m in modules if m.split(".")[0] == "reconcile"}
    assert ours == {"reconcile", "reconcile.gvk", "reconcile.quantity"}
    assert not {"aiohttp", "anyio", "orjson", "structlog"} & {m.split(".")[0] for m in modules}


MANAGER_PROBE = """
import json, sys
from reconcile import Manager, controller_managed_by
print(json.dumps(sorted(sys.modules)))
"""


def test_the_manager_leaves_what_only_its_servers_need_until_they_are_made() -> None:
    # Issue #29 item 5: the import weight of a controller process. aiohttp.web (the metrics,
    # probe and webhook servers), PyYAML (kubeconfigs) and importlib.metadata load when used.
    env = {"PYTHONPATH": str(ROOT), "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", MANAGER_PROBE],
        capture_output=True,
        check=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    modules = set(json.loads(done.stdout))
    assert "reconcile.manager" in modules
    assert not {"aiohttp.web", "yaml", "importlib.metadata", "reconcile.webhook"} & modules


def test_the_stub_lists_what_the_package_exports() -> None:
    stub = ast.parse((Path(reconcile.__file__).parent / "__init__.pyi").read_text())
    names = {
        alias.asname or alias.name
        for node in stub.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert names == set(reconcile.__all__)
    # mypy re-exports only `import name as name` from a stub: an alias under another name
    # would type-check as missing.
    for node in stub.body:
        if isinstance(node, ast.ImportFrom):
            assert all(alias.asname == alias.name for alias in node.names), ast.unparse(node)


def test_a_name_resolves_to_the_object_of_its_module() -> None:
    from reconcile.cache import Cache
    from reconcile.manager import Manager

    assert reconcile.Manager is Manager
    assert reconcile.Cache is Cache
    assert reconcile.predicate is importlib.import_module("reconcile.predicate")
    with pytest.raises(AttributeError, match="no attribute 'Nonexistent'"):
        _ = getattr(reconcile, "Nonexistent")  # noqa: B009


def _documented_imports() -> list[tuple[str, str]]:
    found = []
    for document in DOCUMENTS:
        for match in IMPORT.finditer(document.read_text()):
            found.append((document.name, match.group(0).strip()))
    return found


def _documented_paths() -> list[tuple[str, str]]:
    return sorted(
        {(d.name, m.group(0)) for d in DOCUMENTS for m in SOURCE_PATH.finditer(d.read_text())}
    )


def test_the_documents_show_imports_and_paths() -> None:
    assert len(_documented_imports()) >= 3
    assert len(_documented_paths()) >= 10


@pytest.mark.parametrize(("document", "statement"), _documented_imports())
def test_a_documented_import_works(document: str, statement: str) -> None:
    node = ast.parse(statement).body[0]
    assert isinstance(node, ast.ImportFrom)
    assert node.module
    module = importlib.import_module(node.module)
    for alias in node.names:
        assert hasattr(module, alias.name) or importlib.util.find_spec(
            f"{node.module}.{alias.name}"
        ), f"{document}: {statement}"


@pytest.mark.parametrize(("document", "path"), _documented_paths())
def test_a_file_the_documents_name_exists(document: str, path: str) -> None:
    assert (ROOT / path).exists(), f"{document} names {path}, which is not in the tree"
