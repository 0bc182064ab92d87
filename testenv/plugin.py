"""Plugin is testenv's pytest plugin: shared real control planes and a fresh namespace per test.

Fixtures (async ones run on pytest-asyncio's session loop, so tests using them need
``loop_scope="session"``, e.g. ``asyncio_default_test_loop_scope = "session"`` in the ini file):

- ``testenv``: the session's Environment with the host control plane, started on first use.
- ``host``: its host ControlPlane.
- ``namespace``: a namespace created on the host for this test only.
- ``multicluster``: the same Environment with the member clusters (``--testenv-members``) added.
- ``manager``: a reconcile Manager of the host as admin, not started (``async with
  running(manager)`` runs it inside the test).
- ``webhooks``: installs a test's webhook configurations and conversion CRDs for a local server
  (``await webhooks.install(WebhookInstallOptions(...))`` gives host, port and cert dir) and
  removes them after the test, so a webhook nobody serves any more refuses nothing else.

A missing kube-apiserver or etcd fails the tests that need them; it never skips them.
``--testenv-keep`` leaves the control planes running after the session for debugging, prints their
kubeconfigs and how to stop them (``reconcile testenv down --dir D``).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from testenv.binaries import BinaryNotFound, find_binaries
from testenv.controlplane import ControlPlane
from testenv.environment import Environment
from testenv.manager import manager_for
from testenv.state import save_state
from testenv.webhooks import WebhookInstaller

if TYPE_CHECKING:
    from reconcile import Manager

__all__ = ["host", "manager", "multicluster", "namespace", "testenv", "webhooks"]

DEFAULT_MEMBERS = "member1,member2"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("testenv", "real kube-apiserver control planes")
    group.addoption(
        "--testenv-keep",
        action="store_true",
        help="leave the control planes running after the session and print their kubeconfigs",
    )
    group.addoption(
        "--testenv-members",
        default=DEFAULT_MEMBERS,
        help=f"member clusters the multicluster fixture starts (default {DEFAULT_MEMBERS})",
    )
    parser.addini("testenv_crds", "CRD files or directories installed into every cluster", "paths")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "multicluster: the test uses the host + member clusters")


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def testenv(request: pytest.FixtureRequest) -> AsyncIterator[Environment]:
    """The session's shared Environment, started with the host control plane."""
    try:
        binaries = find_binaries()
    except BinaryNotFound as error:
        missing = str(error)
    else:
        missing = ""
    if missing:
        pytest.fail(missing, pytrace=False)
    keep = bool(request.config.getoption("--testenv-keep"))
    crds: list[Path] = list(request.config.getini("testenv_crds"))
    env = Environment(binaries=binaries, crd_paths=crds, persistent=keep)
    await env.start()
    try:
        yield env
    finally:
        if keep:
            _report_kept(request.config, env)
        else:
            await env.stop()


_KEPT = pytest.StashKey[list[str]]()


def _report_kept(config: pytest.Config, env: Environment) -> None:
    directory = save_state(env, Path(config.rootpath) / ".testenv-keep")
    lines = [f"testenv kept running; kubeconfigs in {directory}:"]
    lines += [f"  {name}: {directory / f'{name}.kubeconfig'}" for name in env.clusters]
    lines.append(f"stop it with: reconcile testenv down --dir {directory}")
    config.stash[_KEPT] = lines


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    # Fixture teardown output is captured; the summary is where a kept control plane is announced.
    for line in config.stash.get(_KEPT, []):
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def host(testenv: Environment) -> ControlPlane:
    """The host control plane of the shared Environment."""
    return testenv.host


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def multicluster(request: pytest.FixtureRequest, testenv: Environment) -> Environment:
    """The shared Environment with every ``--testenv-members`` member started."""
    wanted = str(request.config.getoption("--testenv-members")).split(",")
    for name in (n.strip() for n in wanted if n.strip()):
        if name not in testenv.clusters:
            await testenv.add_member(name)
    return testenv


@pytest_asyncio.fixture(loop_scope="session")
async def namespace(request: pytest.FixtureRequest, host: ControlPlane) -> AsyncIterator[str]:
    """A namespace on the host that only this test uses; deleted afterwards.

    testenv runs no namespace controller, so the deleted namespace stays Terminating with its
    content: names never repeat, tests never see each other's objects.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{slug or 'test'}-{secrets.token_hex(3)}"
    await host.create_namespace(name)
    try:
        yield name
    finally:
        await host.request("DELETE", f"/api/v1/namespaces/{name}")


@pytest_asyncio.fixture(loop_scope="session")
async def manager(host: ControlPlane) -> Manager:
    """A Manager of the host as admin, not started: run it with ``async with running(manager)``.

    Started here, it would be stopped in another task than the one that started it, which
    anyio's task groups refuse; the test that starts it stops it.
    """
    return await manager_for(host)


@pytest_asyncio.fixture(loop_scope="session")
async def webhooks(host: ControlPlane) -> AsyncIterator[WebhookInstaller]:
    """Installs webhooks for this test (on the host unless told otherwise); removed after it."""
    installer = WebhookInstaller(host)
    try:
        yield installer
    finally:
        await installer.uninstall()
