"""Fixtures of the integration tests: an admin client of the real host, Karmada's CRDs on it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from controllers.api import crd_paths
from reconcile import Client
from testenv import ControlPlane, Environment
from tests.builders import admin_client


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def karmada_crds(host: ControlPlane) -> None:
    """Karmada's CRDs installed on the host (once a session; installing is idempotent)."""
    await host.install_crds(crd_paths())


@pytest_asyncio.fixture(loop_scope="session")
async def client(host: ControlPlane) -> AsyncIterator[Client]:
    """A client of the host as its admin, closed after the test."""
    async with await admin_client(host) as live:
        yield live


@pytest_asyncio.fixture(loop_scope="session")
async def restartable(testenv: Environment) -> ControlPlane:
    """A cluster of its own, so stopping its apiserver disturbs no other test."""
    return testenv.clusters.get("restartable") or await testenv.add_member("restartable")


@pytest_asyncio.fixture(loop_scope="session")
async def karmada_client(karmada_crds: None, client: Client) -> Client:
    """The admin client of a host that serves Karmada's kinds."""
    return client
