"""End-to-end scaffolding: a running controller-manager and clients of every cluster."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream

from controllers.api import CLUSTER_GVK, READY_CONDITION, RESOURCE_BINDING_GVK
from controllers.binding.controller import WORKS_SYNCED_CONDITION
from controllers.cluster import ClusterStatusOptions, clusters_ready
from controllers.context import Context
from controllers.controllermanager import build
from controllers.workloadrebalancer import parse_time
from reconcile import (
    EVENT_GVK,
    GVK,
    Client,
    ClusterConfig,
    Condition,
    Manager,
    ManagerOptions,
    NotFound,
    get_condition,
)
from testenv import ControlPlane, Environment, eventually
from tests.builders import (
    deployment,
    deployment_selector,
    get_or_none,
    propagation_policy,
    weighted,
)

MEMBERS = ("member1", "member2")
FAST_HEALTH = ClusterStatusOptions(
    update_frequency=1.0, failure_threshold=2.0, success_threshold=2.0
)
"""Cluster health checked every second, changed after 2 s: for tests that wait on Ready."""
DEPLOYMENT = GVK("apps", "v1", "Deployment")
POLICY = GVK("policy.karmada.io", "v1alpha1", "PropagationPolicy")
OVERRIDE = GVK("policy.karmada.io", "v1alpha1", "OverridePolicy")


async def client_of(plane: ControlPlane) -> Client:
    """A client of ``plane`` as its admin."""
    config = await ClusterConfig.from_kubeconfig(
        plane.kubeconfig, temp_dir=plane.directory / "client"
    )
    return Client(config)


class Stack:
    """The host and member clients of a running controller-manager, its Manager and Context."""

    def __init__(
        self,
        env: Environment,
        host: Client,
        members: dict[str, Client],
        namespace: str,
        manager: Manager,
        context: Context,
    ) -> None:
        self.env, self.host, self.members, self.namespace = env, host, members, namespace
        # What the controllers share (e.g. the interpreter), for waiting on in-process state.
        self.manager, self.context = manager, context

    async def member_deployment(self, cluster: str, name: str) -> dict[str, Any] | None:
        try:
            return await self.members[cluster].get(DEPLOYMENT, name, namespace=self.namespace)
        except NotFound:
            return None

    async def replicas(self, name: str) -> dict[str, int | None]:
        found = {}
        for cluster in self.members:
            deployment = await self.member_deployment(cluster, name)
            found[cluster] = deployment["spec"]["replicas"] if deployment else None
        return found

    async def wait_replicas(self, name: str, expected: dict[str, int | None]) -> None:
        async def matches() -> bool:
            return await self.replicas(name) == expected

        await eventually(matches, timeout=60, interval=0.2)

    async def report_ready(self, name: str) -> None:
        """Play the Deployment controller testenv lacks: every replica of ``name`` ready on each
        member."""
        for client in self.members.values():
            deployment = await client.get(DEPLOYMENT, name, namespace=self.namespace)
            replicas = deployment["spec"]["replicas"]
            deployment["status"] = {
                "observedGeneration": deployment["metadata"]["generation"],
                "replicas": replicas,
                "readyReplicas": replicas,
                "updatedReplicas": replicas,
                "availableReplicas": replicas,
            }
            await client.update_status(deployment)


@asynccontextmanager
async def running(
    env: Environment,
    namespace: str,
    *,
    health: ClusterStatusOptions | None = None,
    config: ClusterConfig | None = None,
    options: ManagerOptions | None = None,
    **build_options: Any,
) -> AsyncIterator[Stack]:
    """The whole controller-manager on the host, and clients of every cluster; yields once every
    member is Ready with its API enablements known (else a fresh session's first template could
    be scheduled before a member is known to serve it) and has ``namespace`` (made by the
    namespace controller). The controller-manager reaches the host with ``config`` (default: as
    admin) and runs with ``options`` (default: no metrics); ``build_options`` go to
    ``controllers.controllermanager.build`` (e.g. ``failover``)."""
    host = await client_of(env.host)
    members = {name: await client_of(env.members[name]) for name in MEMBERS}
    if config is None:
        config = await ClusterConfig.from_kubeconfig(
            env.host.kubeconfig, temp_dir=env.host.directory / "client"
        )
    manager = Manager(
        config, options=options or ManagerOptions(metrics_bind_address="0", compress_cache=True)
    )
    context = build(
        manager, scratch=env.host.directory / "client", cluster_status=health, **build_options
    )
    try:
        async with anyio.create_task_group() as group:
            await group.start(manager.start)
            await eventually(lambda: clusters_ready(host, MEMBERS), timeout=60, interval=0.2)
            # The namespace controller creates the test's namespace in the members.
            await eventually(lambda: in_every_member(members, namespace), timeout=60)
            yield Stack(env, host, members, namespace, manager, context)
            manager.stop()
    finally:
        for client in (host, *members.values()):
            await client.close()


async def has_namespace(client: Client, name: str) -> bool:
    """Whether the cluster of ``client`` has the namespace ``name``."""
    try:
        await client.get(GVK("", "v1", "Namespace"), name)
    except NotFound:
        return False
    return True


async def in_every_member(members: dict[str, Client], namespace: str) -> bool:
    """Whether every member has the namespace ``namespace``."""
    for member in members.values():
        if not await has_namespace(member, namespace):
            return False
    return True


def new_deployment(name: str, namespace: str, replicas: int) -> dict[str, Any]:
    """An nginx Deployment template."""
    return deployment(name, namespace, replicas)


def new_policy(name: str, namespace: str, target: str, **placement: Any) -> dict[str, Any]:
    """A PropagationPolicy of the Deployment ``target``: both members, 2:1 unless ``placement``
    says otherwise."""
    default = weighted(MEMBERS, (2, 1))
    return propagation_policy(
        name, namespace, deployment_selector(target), {**default, **placement}
    )


async def after_last_schedule(stack: Stack, binding_name: str) -> None:
    """Wait until a second has passed since the binding was last scheduled."""
    # Timestamps have second precision: a rebalancer created in the second of the last
    # scheduling would not be after it (Karmada compares them alike).
    binding = await stack.host.get(RESOURCE_BINDING_GVK, binding_name, namespace=stack.namespace)
    last = parse_time(binding["status"]["lastScheduledTime"])

    async def passed() -> bool:
        return datetime.now(UTC) >= last + timedelta(seconds=1)

    await eventually(passed, timeout=5)


async def warning_event(
    stack: Stack, obj: str, reason: str, namespace: str | None = None
) -> dict[str, Any]:
    """Wait for a Warning Event with ``reason`` about the object named ``obj`` in ``namespace``
    (default: the test's); return the latest."""

    async def found() -> dict[str, Any] | None:
        events = await stack.host.list(
            EVENT_GVK,
            namespace=namespace or stack.namespace,
            field_selector=f"involvedObject.name={obj}",
        )
        matching = [e for e in events["items"] if (e["type"], e["reason"]) == ("Warning", reason)]
        return matching[-1] if matching else None

    return await eventually(found, timeout=90, interval=0.3)


async def cluster_ready(stack: Stack, cluster: str, status: str) -> Condition:
    """Wait until the Cluster's Ready condition has ``status``; return the condition."""

    async def matches() -> Condition | None:
        condition = get_condition(await stack.host.get(CLUSTER_GVK, cluster), READY_CONDITION)
        return condition if condition and condition.get("status") == status else None

    return await eventually(matches, timeout=90, interval=0.3)


async def works_synced_failure(stack: Stack, binding: str) -> str:
    """Wait until the binding (in the test's namespace) is WorksSynced=False; its message."""

    async def failed() -> str | None:
        found = await get_or_none(stack.host, RESOURCE_BINDING_GVK, binding, stack.namespace)
        condition = get_condition(found, WORKS_SYNCED_CONDITION) if found else None
        if condition is None or condition.get("status") != "False":
            return None
        return str(condition.get("message", ""))

    return await eventually(failed, timeout=90, interval=0.5)


@asynccontextmanager
async def tcp_listener() -> AsyncIterator[tuple[int, list[str]]]:
    """A TCP listener on 127.0.0.1; yields its port and the peers that connected."""
    heard: list[str] = []

    async def record(stream: SocketStream) -> None:
        heard.append(str(stream.extra(SocketAttribute.remote_address)))
        await stream.aclose()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, record)
        yield listener.extra(SocketAttribute.local_port), heard
        group.cancel_scope.cancel()
