"""End to end: a standby controller-manager watches its members' managed objects before it leads.

#15 item 5 (standbys are warm): besides the host caches and the member connections, the
execution controller's member informers (one label-scoped informer per kind a member's Works
apply) start on every replica, as each member connects and as each Work appears, so that a
takeover does not first wait for a member list per kind. The manager here never leads: the Lease
is held by another identity for an hour.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import anyio
import pytest

from controllers.api import WORK_GVK, execution_namespace
from controllers.context import Context
from controllers.controllermanager import build
from controllers.execution.source import MANAGED_SELECTOR
from reconcile import (
    GVK,
    AlreadyExists,
    Client,
    ClusterConfig,
    Manager,
    ManagerOptions,
    NotFound,
    Obj,
)
from testenv import Environment, eventually
from tests.builders import configmap
from tests.e2e.stack import client_of

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
LEASE = GVK("coordination.k8s.io", "v1", "Lease")
LEASE_NAME = "warm-standby"


async def test_a_standby_watches_the_kinds_its_members_works_apply(
    joined: Environment, namespace: str
) -> None:
    host = await client_of(joined.host)
    try:
        await _hold_the_lease(host, namespace)
        work_namespace = execution_namespace("member1")
        with contextlib.suppress(AlreadyExists):
            await host.create(_namespace(work_namespace))
        await host.create(_work("warm-cm", work_namespace, configmap("warm", namespace, a="1")))
        async with _standby(joined, namespace) as (manager, context):
            await eventually(lambda: _watched(context, CONFIGMAP), timeout=60, interval=0.1)
            # A Work that appears later (a new kind) is watched at once too.
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "warm", "namespace": namespace},
            }
            await host.create(_work("warm-secret", work_namespace, secret))
            await eventually(lambda: _watched(context, SECRET), timeout=60, interval=0.1)
            assert not manager.elected.is_set(), "the Lease is another's: this replica stands by"
        async with await client_of(joined.members["member1"]) as member:
            with pytest.raises(NotFound):  # watched, not applied: a standby writes nothing
                await member.get(CONFIGMAP, "warm", namespace=namespace)
    finally:
        await host.close()


async def _watched(context: Context, gvk: GVK) -> bool:
    member = context.members.get("member1")
    if member is None:
        return False
    return any(
        scope.gvk == gvk and scope.label_selector == MANAGED_SELECTOR and informer.has_synced()
        for scope, informer in member.cache.informers().items()
    )


@asynccontextmanager
async def _standby(env: Environment, namespace: str) -> AsyncIterator[tuple[Manager, Context]]:
    config = await ClusterConfig.from_kubeconfig(
        env.host.kubeconfig, temp_dir=env.host.directory / "client"
    )
    options = ManagerOptions(
        metrics_bind_address="0",
        leader_election=True,
        leader_election_id=LEASE_NAME,
        leader_election_namespace=namespace,
    )
    manager = Manager(config, options=options)
    context = build(
        manager, controllers=["cluster", "execution"], scratch=env.host.directory / "client"
    )
    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        yield manager, context
        manager.stop()


async def _hold_the_lease(host: Client, namespace: str) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    spec = {
        "holderIdentity": "another-replica",
        "leaseDurationSeconds": 3600,
        "acquireTime": now,
        "renewTime": now,
    }
    metadata = {"name": LEASE_NAME, "namespace": namespace}
    await host.create(
        {"apiVersion": LEASE.api_version, "kind": "Lease", "metadata": metadata, "spec": spec}
    )


def _namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _work(name: str, namespace: str, manifest: Obj) -> Obj:
    return {
        "apiVersion": WORK_GVK.api_version,
        "kind": "Work",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"workload": {"manifests": [manifest]}},
    }
