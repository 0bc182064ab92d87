"""Fixtures of the end-to-end tests: the testenv host and members, joined."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest_asyncio

from controllers.api import crd_paths
from controllers.join import join_cluster
from testenv import Environment, find_binaries
from tests.e2e.stack import MEMBERS, client_of


@contextlib.asynccontextmanager
async def own_control_plane() -> AsyncIterator[Environment]:
    """A control plane of a module's own: etcd, host, member1 and member2 (not joined), for
    modules whose controller-managers would otherwise act on what earlier tests left on the
    session's shared one, or whose faults (an etcd restart) must not reach other tests."""
    env = Environment(binaries=find_binaries())
    await env.start()
    try:
        for name in MEMBERS:
            await env.add_member(name)
        yield env
    finally:
        await env.stop()


async def join_members(env: Environment) -> Environment:
    """``env`` with the CRDs installed on the host and the members joined (a ServiceAccount
    token each); again on every call, so a test that changed a member's join finds it mended."""
    await env.host.install_crds(crd_paths())
    async with await client_of(env.host) as host:
        for name in MEMBERS:
            kubeconfig = str(env.members[name].kubeconfig)
            await join_cluster(name, host=host, member_kubeconfig=kubeconfig)
    return env


@pytest_asyncio.fixture(loop_scope="session")
async def joined(multicluster: Environment) -> Environment:
    """The members joined to the host (a ServiceAccount token each), CRDs installed."""
    return await join_members(multicluster)
