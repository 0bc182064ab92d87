"""End to end: a Pull member served by ``reconcile agent`` running as its own process (issue #31).

On a control plane of this module's own, member1 is joined in Push mode and member2 registered in
Pull mode (``register_cluster``: no member2 credential on the host; its agent's kubeconfig in a
file). The controller-manager runs in-process (``running``); member2's agent runs as a separate
process, ``python -m controllers.cli agent``, as an operator would start it in member2.

A 2:1 Deployment with per-member overrides lands on both members, member2's part applied by the
agent, and its status comes back to the host template through both paths. SIGKILLing the agent
stops member2's heartbeat: the controller-manager's health monitor turns its Cluster
Ready=Unknown with the unreachable taint, a ClusterTaintPolicy adds NoExecute, and the taint
manager moves member2's replica to member1. The agent started again brings Ready back and every
taint goes. The agent never met a 403 meanwhile: register's RBAC is all it needs.

Bad input, each refused by the agent at start with exit status 2 and one line saying why (no
traceback, nothing written): another member's kubeconfig under member2's name (another cluster
ID: no takeover), and a host credential whose ClusterRoleBinding was deleted.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import pytest_asyncio
from anyio.abc import Process

from controllers.agent import Registration, claim_cluster
from controllers.api import (
    CLUSTER_GVK,
    CLUSTER_TAINT_POLICY_GVK,
    RESOURCE_BINDING_GVK,
    crd_paths,
)
from controllers.cluster import ClusterHealthOptions, ClusterStatusOptions
from controllers.commands.register import write_private
from controllers.eviction.options import FailoverOptions
from controllers.join import join_cluster
from controllers.register import (
    CLUSTER_ROLE_BINDING,
    agent_role_name,
    agent_targets,
    register_cluster,
)
from reconcile import GVK, Client, ClusterConfig, Forbidden, NotFound, get_condition
from testenv import Environment, eventually
from tests.builders import deployment_selector
from tests.e2e.conftest import own_control_plane
from tests.e2e.replicas import log_tail, logged_process
from tests.e2e.stack import (
    DEPLOYMENT,
    OVERRIDE,
    Stack,
    client_of,
    new_deployment,
    new_policy,
    running,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

NAMESPACE = GVK("", "v1", "Namespace")
# The controller-manager probes member1 (Push); the agent probes member2 (Pull) as fast.
STATUS = ClusterStatusOptions(update_frequency=0.5, failure_threshold=2.0, success_threshold=1.0)
AGENT_STATUS_FLAGS = (
    "--cluster-status-update-frequency=500ms",
    "--cluster-failure-threshold=2s",
    "--cluster-success-threshold=1s",
)
# The Lease renewed every 0.5 s; missed for 3 s, the health monitor says Unknown.
HEALTH = ClusterHealthOptions(monitor_period=0.5, grace_period=3.0, startup_grace_period=60.0)
FAILOVER = FailoverOptions(enable_no_execute_taint_eviction=True, graceful_eviction_timeout=600)
MARGIN = 20.0  # slack for a slow, shared machine on top of what the timings allow
UNREACHABLE = ("cluster.karmada.io/unreachable", "NoSchedule")
NOT_READY_NO_EXECUTE = ("cluster.karmada.io/not-ready", "NoExecute")
TAINT_POLICY = "pull-not-ready-no-execute"
REFUSED = re.compile(r"\b403\b|forbidden", re.IGNORECASE)


@dataclass(frozen=True)
class PullEnv:
    """The module's control plane: member1 joined (Push), member2 registered (Pull) with its
    agent's kubeconfig at ``agent_kubeconfig``; ``directory`` holds logs and kubeconfigs."""

    env: Environment
    agent_kubeconfig: Path
    directory: Path


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def pull_env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[PullEnv]:
    # Its own control plane: the session's shared member2 is a Push member for other tests.
    directory = tmp_path_factory.mktemp("pull-mode")
    async with own_control_plane() as env:
        await env.host.install_crds(crd_paths())
        async with await client_of(env.host) as host:
            member1 = str(env.members["member1"].kubeconfig)
            await join_cluster("member1", host=host, member_kubeconfig=member1)
            registered = await register_cluster("member2", host=host)
        path = directory / "member2-agent.kubeconfig"
        write_private(path, registered.kubeconfig)
        yield PullEnv(env, path, directory)


def agent_command(
    env: Environment, cluster: str, karmada_kubeconfig: Path, member: str
) -> list[str]:
    """``reconcile agent`` for Cluster ``cluster`` with the host credential in
    ``karmada_kubeconfig``, running in (reaching) the testenv member ``member``."""
    return [
        sys.executable,
        "-m",
        "controllers.cli",
        "agent",
        "--cluster-name",
        cluster,
        "--karmada-kubeconfig",
        str(karmada_kubeconfig),
        "--kubeconfig",
        str(env.members[member].kubeconfig),
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
        *AGENT_STATUS_FLAGS,
    ]


async def until(check: Callable[[], Awaitable[Any]], timeout: float = 60) -> Any:
    return await eventually(check, timeout=timeout, interval=0.2)


async def cluster(host: Client, name: str) -> dict[str, Any]:
    return await host.get(CLUSTER_GVK, name)


async def ready_status(host: Client, name: str) -> str | None:
    condition = get_condition(await cluster(host, name), "Ready") or {}
    return condition.get("status")


async def taints(host: Client, name: str) -> set[tuple[str, str]]:
    found = (await cluster(host, name)).get("spec", {}).get("taints") or []
    return {(t["key"], t["effect"]) for t in found}


async def targets(stack: Stack, template: str) -> dict[str, int]:
    try:
        binding = await stack.host.get(
            RESOURCE_BINDING_GVK, f"{template}-deployment", namespace=stack.namespace
        )
    except NotFound:
        return {}  # the detector has not made it yet
    return {t["name"]: t.get("replicas", 0) for t in binding["spec"].get("clusters") or []}


async def report_ready(stack: Stack, member: str, template: str) -> None:
    """Play the member's Deployment controller (testenv has none): every replica ready."""
    client = stack.members[member]
    deployment = await client.get(DEPLOYMENT, template, namespace=stack.namespace)
    replicas = deployment["spec"]["replicas"]
    deployment["status"] = {
        "observedGeneration": deployment["metadata"]["generation"],
        "replicas": replicas,
        "readyReplicas": replicas,
        "updatedReplicas": replicas,
        "availableReplicas": replicas,
    }
    await client.update_status(deployment)


def overrides(namespace: str, template: str) -> dict[str, Any]:
    """An OverridePolicy: a label on member2's copy, another registry on member1's."""
    return {
        "apiVersion": OVERRIDE.api_version,
        "kind": OVERRIDE.kind,
        "metadata": {"name": f"{template}-overrides", "namespace": namespace},
        "spec": {
            "resourceSelectors": deployment_selector(template),
            "overrideRules": [
                {
                    "targetCluster": {"clusterNames": ["member2"]},
                    "overriders": {
                        "labelsOverrider": [{"operator": "add", "value": {"tier": "pulled"}}]
                    },
                },
                {
                    "targetCluster": {"clusterNames": ["member1"]},
                    "overriders": {
                        "imageOverrider": [
                            {
                                "component": "Registry",
                                "operator": "replace",
                                "value": "registry.example.com",
                            }
                        ]
                    },
                },
            ],
        },
    }


def not_ready_no_execute() -> dict[str, Any]:
    """NoExecute on member2 while its Ready is not True, removed once it is."""
    return {
        "apiVersion": CLUSTER_TAINT_POLICY_GVK.api_version,
        "kind": CLUSTER_TAINT_POLICY_GVK.kind,
        "metadata": {"name": TAINT_POLICY},
        "spec": {
            "targetClusters": {"clusterNames": ["member2"]},
            "addOnConditions": [
                {"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}
            ],
            "removeOnConditions": [
                {"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}
            ],
            "taints": [{"key": NOT_READY_NO_EXECUTE[0], "effect": NOT_READY_NO_EXECUTE[1]}],
        },
    }


async def test_a_pull_member_is_served_fails_over_and_returns_with_its_agent_process(
    pull_env: PullEnv,
) -> None:
    env = pull_env.env
    namespace = f"pull-{secrets.token_hex(3)}"
    await env.host.create_namespace(namespace)
    log = pull_env.directory / f"agent-{namespace}.log"
    command = agent_command(env, "member2", pull_env.agent_kubeconfig, "member2")
    try:
        await _story(env, namespace, command, log)
    except BaseException:
        print(f"agent log:\n{log_tail(log)}")  # shown by pytest with the failure
        raise
    refused = [line for line in log.read_text().splitlines() if REFUSED.search(line)]
    assert refused == [], "the agent met a 403 on the happy path"


async def _story(env: Environment, namespace: str, command: list[str], log: Path) -> None:
    # The agent first: running() yields once member2 is Ready, which only its agent reports.
    async with (
        logged_process(command, log) as agent,
        running(env, namespace, health=STATUS, cluster_health=HEALTH, failover=FAILOVER) as stack,
    ):
        try:
            await _served(stack)
            await _agent_killed(stack, agent)
            async with logged_process(command, log) as again:
                await _agent_back(stack)
                again.send_signal(signal.SIGTERM)
                with anyio.fail_after(30):
                    assert await again.wait() == 0, "SIGTERM: a clean stop"
        finally:
            with contextlib.suppress(NotFound):
                await stack.host.delete(CLUSTER_TAINT_POLICY_GVK, TAINT_POLICY)


async def _served(stack: Stack) -> None:
    """2:1 over member1 (Push) and member2 (Pull), each with its override; status aggregated."""
    ns = stack.namespace
    await stack.host.create(overrides(ns, "web"))
    await stack.host.create(new_deployment("web", ns, 3))
    await stack.host.create(new_policy("web", ns, "web"))
    await stack.wait_replicas("web", {"member1": 2, "member2": 1})
    # The agent claimed member2's Cluster with its member's cluster ID.
    kube_system = await stack.members["member2"].get(NAMESPACE, "kube-system")
    assert (await cluster(stack.host, "member2"))["spec"]["id"] == kube_system["metadata"]["uid"]

    async def overridden() -> bool:
        one = await stack.member_deployment("member1", "web")
        two = await stack.member_deployment("member2", "web")
        if one is None or two is None:
            return False
        image = one["spec"]["template"]["spec"]["containers"][0]["image"]
        labelled = two["metadata"]["labels"].get("tier") == "pulled"
        return bool(image == "registry.example.com/nginx:1.25" and labelled)

    await until(overridden)
    two = await stack.member_deployment("member2", "web")
    assert two is not None
    assert two["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    one = await stack.member_deployment("member1", "web")
    assert one is not None
    assert "tier" not in one["metadata"]["labels"]

    # member2's status reaches the host only through its agent's work-status.
    await stack.report_ready("web")

    async def aggregated() -> bool:
        template = await stack.host.get(DEPLOYMENT, "web", namespace=ns)
        status = template.get("status") or {}
        return status.get("readyReplicas") == 3 and status.get("replicas") == 3

    await until(aggregated)
    await stack.host.create(not_ready_no_execute())
    assert await ready_status(stack.host, "member2") == "True"
    assert not await taints(stack.host, "member2")


async def _agent_killed(stack: Stack, agent: Process) -> None:
    """No heartbeat: Unknown, unreachable, NoExecute; member2's replica moves to member1."""
    killed = anyio.current_time()
    agent.send_signal(signal.SIGKILL)
    with anyio.fail_after(10):
        await agent.wait()
    bound = HEALTH.grace_period + HEALTH.monitor_period + MARGIN

    async def unknown_and_unreachable() -> bool:
        status = await ready_status(stack.host, "member2")
        return status == "Unknown" and UNREACHABLE in await taints(stack.host, "member2")

    await until(unknown_and_unreachable, timeout=bound)
    # Not before the grace period: the Lease renewed until the kill kept it Ready till then.
    assert anyio.current_time() - killed >= HEALTH.grace_period - 1.0
    assert not await taints(stack.host, "member1")

    async def moved() -> bool:
        return await targets(stack, "web") == {"member1": 3}

    await until(moved)
    assert NOT_READY_NO_EXECUTE in await taints(stack.host, "member2")

    async def member1_has_all() -> bool:
        deployment = await stack.member_deployment("member1", "web")
        return bool(deployment and deployment["spec"]["replicas"] == 3)

    await until(member1_has_all)
    # The graceful eviction ends once member1 reports the moved replica healthy.
    await report_ready(stack, "member1", "web")

    async def eviction_done() -> bool:
        binding = await stack.host.get(
            RESOURCE_BINDING_GVK, "web-deployment", namespace=stack.namespace
        )
        return not binding["spec"].get("gracefulEvictionTasks")

    await until(eviction_done)


async def _agent_back(stack: Stack) -> None:
    """Heartbeat again: Ready, no taints; the evicted copy is deleted from member2 by the agent."""

    async def ready_untainted() -> bool:
        status = await ready_status(stack.host, "member2")
        return status == "True" and not await taints(stack.host, "member2")

    await until(ready_untainted, timeout=60 + MARGIN)

    async def evicted_copy_gone() -> bool:
        return await stack.member_deployment("member2", "web") is None

    await until(evicted_copy_gone)
    assert await targets(stack, "web") == {"member1": 3}


async def run_agent_process(command: list[str]) -> tuple[int, str]:
    """Exit status and stderr of an agent expected to stop at start."""
    with anyio.fail_after(60):
        done = await anyio.run_process(command, check=False)
    return done.returncode, done.stderr.decode()


def one_line_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith("agent: ")
    return lines[0]


async def member_id(env: Environment, member: str) -> str:
    async with await client_of(env.members[member]) as client:
        found = await client.get(NAMESPACE, "kube-system")
    return str(found["metadata"]["uid"])


async def test_an_agent_of_another_member_or_without_its_role_exits_2_saying_why(
    pull_env: PullEnv,
) -> None:
    env = pull_env.env
    member2_id = await member_id(env, "member2")
    async with await client_of(env.host) as host:
        if not (await cluster(host, "member2"))["spec"].get("id"):
            # Run alone, nothing claimed member2 yet: claim it as its agent does at start.
            config = await ClusterConfig.from_kubeconfig(pull_env.agent_kubeconfig)
            async with Client(config) as agent_host:
                await claim_cluster(agent_host, member2_id, Registration("member2"))
        before = await cluster(host, "member2")
        assert before["spec"]["id"] == member2_id

        # member2's name, member1's cluster: another cluster ID, refused.
        command = agent_command(env, "member2", pull_env.agent_kubeconfig, "member1")
        status, stderr = await run_agent_process(command)
        assert status == 2, stderr
        line = one_line_error(stderr)
        assert "Cluster member2 belongs to another member" in line
        assert member2_id in line
        assert await member_id(env, "member1") in line
        after = await cluster(host, "member2")
        assert after["spec"]["id"] == member2_id, "no takeover"
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

        await _without_its_role(pull_env, host)


async def _without_its_role(pull_env: PullEnv, host: Client) -> None:
    """A Cluster registered without a member yet, its agent's ClusterRoleBinding deleted."""
    env, name = pull_env.env, "member3"
    registered = await register_cluster(name, host=host)
    path = pull_env.directory / f"{name}-agent.kubeconfig"
    write_private(path, registered.kubeconfig)
    try:
        await host.delete(CLUSTER_ROLE_BINDING, agent_role_name(name))
        async with Client(await ClusterConfig.from_kubeconfig(path)) as agent_host:

            async def revoked() -> bool:  # the authorizer's RBAC cache catches up
                try:
                    await agent_host.get(CLUSTER_GVK, name)
                except Forbidden:
                    return True
                return False

            await until(revoked, timeout=30)
        status, stderr = await run_agent_process(agent_command(env, name, path, "member2"))
        assert status == 2, stderr
        line = one_line_error(stderr)
        assert f"may not read Cluster {name}" in line
        assert f"reconcile register {name}" in line
        assert not (await cluster(host, name))["spec"].get("id"), "nothing claimed"
    finally:
        for gvk, obj, namespace in agent_targets(name, registered.identity):
            with contextlib.suppress(NotFound):
                await host.delete(gvk, obj, namespace=namespace)
        with contextlib.suppress(NotFound):
            await host.delete(CLUSTER_GVK, name)
