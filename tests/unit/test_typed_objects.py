"""Typed objects: the generated TypedDicts and typed GVKs make mypy check a controller's fields,
while objects stay plain dicts at run time and ``import reconcile`` imports none of them."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import MappingProxyType

import pytest

import reconcile
from reconcile.api.apps.v1 import DEPLOYMENT, Deployment
from reconcile.api.core.v1 import CONFIG_MAP
from reconcile.api.meta.v1 import ObjectList
from reconcile.controllerutil import patch_status_if_changed
from reconcile.gvk import GVK
from reconcile.objects import add_finalizer
from testenv import FakeClient

ROOT = Path(reconcile.__file__).resolve().parent.parent

CORRECT = """
from typing import Any

from reconcile import (
    Client,
    EnqueueRequestForOwner,
    Manager,
    controller_managed_by,
    patch_status_if_changed,
)
from reconcile.api.apps.v1 import DEPLOYMENT, Deployment
from reconcile.api.core.v1 import CONFIG_MAP, ConfigMap
from reconcile.gvk import GVK
from reconcile.objects import add_finalizer, owner_reference, set_controller_reference

SECRET = GVK("", "v1", "Secret")


async def reconcile(client: Client, manager: Manager) -> int:
    deployment = await client.get(DEPLOYMENT, "web", namespace="prod")
    replicas: int = deployment["spec"].get("replicas", 1)
    names = [d["metadata"].get("name", "") for d in (await client.list(DEPLOYMENT))["items"]]
    config: ConfigMap = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"n": str(replicas)}}
    set_controller_reference(deployment, config)
    created: ConfigMap = await client.create(config)
    add_finalizer(created, "example.com/cleanup")
    patched: Deployment = await client.patch(deployment, {"spec": {"replicas": 2}})
    # The helpers take typed objects: an owner reference in typed metadata, a typed status write.
    config["metadata"] = {"ownerReferences": [owner_reference(deployment)]}
    await patch_status_if_changed(client, deployment, patched)
    every: list[ConfigMap] = await client.list_all(CONFIG_MAP, namespace="prod")
    untyped: dict[str, Any] = await client.get(SECRET, "s", namespace="prod")
    literal: dict[str, Any] = await client.create({"apiVersion": "v1", "kind": "Secret"})
    page: dict[str, Any] = await client.list(SECRET, limit=10)
    controller_managed_by(manager).for_(DEPLOYMENT).owns(CONFIG_MAP).watches(
        CONFIG_MAP, EnqueueRequestForOwner(DEPLOYMENT)
    )
    return len(names) + len(every) + len(untyped) + len(literal) + len(page) + len(patched)
"""

MISSPELT = """
from reconcile import Client
from reconcile.api.apps.v1 import DEPLOYMENT, Deployment

web: Deployment = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {"replicsa": 3, "selector": {}, "template": {}},
}


async def scale(client: Client) -> int:
    deployment = await client.get(DEPLOYMENT, "web", namespace="prod")
    return deployment["spec"]["replicsa"]
"""


# The tutorials' code, as a reader copies it: the python blocks of each page, in order.
TYPED_PAGES = {"tutorial.py": "tutorial.md", "crd_tutorial.py": "crd-tutorial.md"}
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def page_code(page: str) -> str:
    """The runnable python blocks of ``docs/page``, one after the other."""
    text = (ROOT / "docs" / page).read_text()
    return "\n\n".join(m.group(1) for m in PYTHON_BLOCK.finditer(text))


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """mypy --strict's errors on the fixtures and the tutorials' code, by file (one run reads
    the framework once)."""
    work = tmp_path_factory.mktemp("typed")
    files = {"correct.py": textwrap.dedent(CORRECT), "misspelt.py": textwrap.dedent(MISSPELT)}
    files |= {name: page_code(page) for name, page in TYPED_PAGES.items()}
    for name, text in files.items():
        (work / name).write_text(text)
    # MYPYPATH: the checkout under test, whatever the installed package points at; run in the
    # temporary directory so that only --strict applies (not this repository's configuration).
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    command = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(work / ".cache")]
    done = subprocess.run(
        [*command, "--python-version", "3.11", *files],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    errors: dict[str, list[str]] = {name: [] for name in files}
    for line in done.stdout.splitlines():
        name, _, rest = line.partition(":")
        if name in errors and ": error:" in line:
            errors[name].append(rest)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return errors


def test_correct_typed_code_passes_mypy_strict(mypy_errors: dict[str, list[str]]) -> None:
    assert mypy_errors["correct.py"] == []


@pytest.mark.parametrize("name", sorted(TYPED_PAGES))
def test_the_tutorials_code_passes_mypy_strict(
    mypy_errors: dict[str, list[str]], name: str
) -> None:
    assert mypy_errors[name] == [], f"docs/{TYPED_PAGES[name]}"


def test_a_misspelt_field_in_a_typed_object_is_a_mypy_error(
    mypy_errors: dict[str, list[str]],
) -> None:
    errors = mypy_errors["misspelt.py"]
    assert any('Extra key "replicsa" for TypedDict "DeploymentSpec"' in e for e in errors)
    assert any('TypedDict "DeploymentSpec" has no key "replicsa"' in e for e in errors)


def test_typed_handles_are_plain_gvks_at_run_time() -> None:
    assert GVK("apps", "v1", "Deployment") == DEPLOYMENT
    assert hash(CONFIG_MAP) == hash(GVK("", "v1", "ConfigMap"))
    built = Deployment(kind="Deployment", spec={"selector": {}, "template": {}})
    assert type(built) is dict
    assert ObjectList[Deployment](items=[built]) == {"items": [built]}
    assert "spec" in Deployment.__required_keys__


def test_the_changing_helpers_refuse_a_read_only_mapping_clearly() -> None:
    with pytest.raises(TypeError, match="cannot change a mappingproxy in place"):
        add_finalizer(MappingProxyType({"metadata": {}}), "example.com/f")
    changed = MappingProxyType({"status": {"phase": "Ready"}})
    with pytest.raises(TypeError, match="cannot write the answer into a mappingproxy"):
        asyncio.run(patch_status_if_changed(FakeClient(), {}, changed))


def test_importing_reconcile_imports_no_generated_module() -> None:
    probe = "import json, sys, reconcile, reconcile.client; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        check=True,
        text=True,
        timeout=60,
    )
    loaded = [m for m in json.loads(done.stdout) if m.startswith("reconcile.api")]
    assert loaded == []
