"""The python blocks of the docs run as written, so the docs cannot drift from the code.

Each page's ```` ```python ```` blocks are executed in order as one module (a later block may use
what an earlier one defined, as a reader following the page would), with tracebacks pointing at
the page's own lines; the test functions a page defines are then run against testenv. A block
that cannot run here is fenced ```` ```python no-run ```` and says so in the page.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from reconcile import Client, ClusterConfig, Manager, ManagerOptions, is_condition_true
from reconcile.api.core.v1 import CONFIG_MAP
from reconcile.gen.crd import crd_for, crd_yaml
from reconcile.rbac import role_manifests
from testenv import ControlPlane, WebhookInstaller, eventually, running

pytestmark = pytest.mark.asyncio(loop_scope="session")

DOCS = Path(__file__).parents[2] / "docs"
RBAC_GROUP = "rbac.authorization.k8s.io"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)
ANY_BLOCK = re.compile(r"^```python( no-run)?\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks(page: Path, pattern: re.Pattern[str] = BLOCK) -> list[tuple[int, str]]:
    """The ``python`` blocks of ``page`` with the line each starts on (0-based)."""
    text = page.read_text()
    group = pattern.groups
    return [(text.count("\n", 0, m.start(group)), m.group(group)) for m in pattern.finditer(text)]


def run_page(page: Path) -> dict[str, Any]:
    """Execute every python block of ``page`` in one module; returns its namespace.

    The module is in ``sys.modules``, as an imported one is: code that looks a class's module up
    (``typing.get_type_hints``, so ``reconcile gen crd``'s ``crd_for``) finds it. The blocks do not
    inherit this file's ``from __future__`` imports: a page runs as the reader's own module would.
    """
    blocks = python_blocks(page)
    assert blocks, f"{page.name} has no python blocks"
    module = ModuleType(f"docs.{page.stem}")
    sys.modules[module.__name__] = module
    for line, source in blocks:
        # Padding keeps line numbers in tracebacks those of the page.
        code = compile("\n" * line + source, str(page), "exec", dont_inherit=True)
        exec(code, module.__dict__)
    return module.__dict__


async def test_every_python_block_of_the_docs_compiles() -> None:
    pages = sorted(DOCS.glob("*.md"))
    assert pages
    for page in pages:
        for line, source in python_blocks(page, ANY_BLOCK):
            # no-run blocks may be bodies of async functions: allow a top-level await.
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            compile("\n" * line + source, str(page), "exec", flags=flags)


async def test_the_tutorial_runs_as_written(manager: Manager, namespace: str) -> None:
    module = run_page(DOCS / "tutorial.md")
    assert inspect.iscoroutinefunction(module["main"])  # step 2's entry point, not run here
    assert module["pytestmark"]
    await module["test_pod_count_follows_pods"](manager, namespace)


async def test_the_crd_tutorial_runs_as_written(
    host: ControlPlane, manager: Manager, namespace: str, tmp_path: Path
) -> None:
    module = run_page(DOCS / "crd-tutorial.md")
    await module["test_copies_follow_their_source"](host, manager, namespace, tmp_path)


async def test_the_testing_page_runs_as_written(
    host: ControlPlane, namespace: str, manager: Manager
) -> None:
    module = run_page(DOCS / "testing.md")
    await module["test_configmap"](host, namespace)
    await module["test_configmaps_get_labelled"](host, namespace, manager)


async def test_the_webhooks_page_runs_as_written(
    host: ControlPlane, namespace: str, webhooks: WebhookInstaller
) -> None:
    module = run_page(DOCS / "webhooks.md")
    await module["test_webhooks_default_validate_and_convert"](host, webhooks, namespace)


async def test_the_crd_tutorials_controller_needs_only_its_declared_permissions(
    host: ControlPlane, client: Client, namespace: str, tmp_path: Path
) -> None:
    """The page's PERMISSIONS, written as RBAC by `reconcile gen rbac`'s role_manifests, are
    enough: its controller runs as a user bound to that ClusterRole alone."""
    page = run_page(DOCS / "crd-tutorial.md")
    (tmp_path / "crd.yaml").write_text(crd_yaml(crd_for(page["configmapcopies"])))
    await host.install_crds([tmp_path])
    user = await host.add_user(f"copier-{namespace}")
    for role in role_manifests(user.name, [page["PERMISSIONS"]]):
        await client.create(role)
    await client.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": user.name},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": user.name},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": user.name}],
        }
    )
    config = await ClusterConfig.from_kubeconfig(user.kubeconfig, temp_dir=tmp_path / "client")
    manager = Manager(config, options=ManagerOptions(metrics_bind_address="0"))
    page["setup"](manager)
    target = f"{namespace}-t"
    await host.create_namespace(target)
    source = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}
    await client.create({**source, "metadata": {"name": "src", "namespace": namespace}})
    copies = {page["COPY_OF_NAMESPACE"]: namespace}

    async def copied_and_ready() -> bool:
        found = await client.list(CONFIG_MAP, namespace=target, label_selector=copies)
        cmc = await client.get(page["CONFIG_MAP_COPY"], "share", namespace=namespace)
        return len(found["items"]) == 1 and is_condition_true(cmc, page["READY"])

    async def copies_gone() -> bool:
        return not (await client.list(CONFIG_MAP, label_selector=copies))["items"]

    async with running(manager):
        await client.create(page["configmapcopy"]("share", namespace, "src", [target]))
        await eventually(copied_and_ready, timeout=30)
        await client.delete(page["CONFIG_MAP_COPY"], "share", namespace=namespace)
        await eventually(copies_gone, timeout=30)
