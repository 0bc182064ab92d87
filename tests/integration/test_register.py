"""``reconcile register`` on a real host (RBAC authorization): the agent's kubeconfig may do what
a Pull cluster's agent does and nothing else, a Cluster is never taken over, and unjoin removes
everything register made.

The agent's identity is used exactly as the agent will use it: a client built from the
kubeconfig register wrote (the ServiceAccount's TokenRequest token, the host's URL and CA).
"""

from __future__ import annotations

import contextlib
import io
import secrets
import stat
import sys
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import anyio
import pytest
import pytest_asyncio
import yaml

from controllers.api import CLUSTER_GVK, WORK_GVK, execution_namespace
from controllers.commands.errors import CommandError
from controllers.commands.unjoin import run_unjoin
from controllers.register import (
    AGENT_ANNOTATION,
    AgentIdentity,
    RegisterError,
    agent_targets,
    register_cluster,
)
from reconcile import GVK, Client, ClusterConfig, Forbidden
from testenv import ControlPlane
from tests.builders import cluster, delete_and_wait, gone

pytestmark = pytest.mark.asyncio(loop_scope="session")

SECRET = GVK("", "v1", "Secret")
LEASE = GVK("coordination.k8s.io", "v1", "Lease")
EVENT = GVK("", "v1", "Event")


def _work(cluster_name: str, name: str) -> dict[str, Any]:
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"k": "v"},
    }
    return {
        "apiVersion": WORK_GVK.api_version,
        "kind": "Work",
        "metadata": {"name": name, "namespace": execution_namespace(cluster_name)},
        "spec": {"workload": {"manifests": [manifest]}},
    }


def _event(namespace: str, work: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{work['metadata']['name']}.{secrets.token_hex(4)}",
            "namespace": namespace,
        },
        "involvedObject": {
            "apiVersion": work["apiVersion"],
            "kind": "Work",
            "name": work["metadata"]["name"],
            "namespace": namespace,
        },
        "reason": "SyncSucceed",
        "message": "applied",
        "type": "Normal",
        "source": {"component": "reconcile-agent"},
    }


async def _agent(tmp_path: Path, kubeconfig: str) -> Client:
    document = yaml.safe_load(kubeconfig)
    config = await ClusterConfig.from_kubeconfig_dict(document, temp_dir=tmp_path)
    return Client(config, field_manager="reconcile-agent")


async def _forbidden(call: Awaitable[Any]) -> None:
    with pytest.raises(Forbidden):
        await call


@pytest_asyncio.fixture(loop_scope="session")
async def pull(karmada_client: Client) -> AsyncIterator[str]:
    """A Pull cluster name of this test's own; whatever register made for it is removed after."""
    name = f"pull-{secrets.token_hex(3)}"
    yield name
    with contextlib.suppress(CommandError):  # a test that unjoined it already
        await run_unjoin(name, host=karmada_client, member=None, out=io.StringIO())


async def test_the_agent_may_do_its_own_work_and_gets_403_on_anything_else(
    karmada_client: Client, pull: str, tmp_path: Path
) -> None:
    admin = karmada_client
    other = f"other-{secrets.token_hex(3)}"
    result = await register_cluster(pull, host=admin, provider="kind", region="r1")
    await admin.create(cluster(other))
    await admin.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": execution_namespace(other)}}
    )
    mine = await admin.create(_work(pull, "w1"))
    theirs = await admin.create(_work(other, "w1"))
    created = await admin.get(CLUSTER_GVK, pull)
    assert created["spec"]["syncMode"] == "Pull"
    assert "secretRef" not in created["spec"]
    assert (created["spec"]["provider"], created["spec"]["region"]) == ("kind", "r1")
    works = execution_namespace(pull)
    async with await _agent(tmp_path, result.kubeconfig) as agent:
        # Its own Works: read, watched, updated, their status written, Events about them.
        listed = await agent.list(WORK_GVK, namespace=works)
        assert [w["metadata"]["name"] for w in listed["items"]] == ["w1"]
        async with agent.watch(WORK_GVK, namespace=works, timeout_seconds=1):
            pass
        work = await agent.get(WORK_GVK, "w1", namespace=works)
        work["metadata"].setdefault("labels", {})["seen"] = "yes"
        await agent.update(work)
        work = await agent.get(WORK_GVK, "w1", namespace=works)
        work["status"] = {"conditions": []}
        await agent.update_status(work)
        await agent.create(_event(works, mine))
        # Its own Cluster and its status, listed and watched by name.
        by_name = f"metadata.name={pull}"
        own = await agent.list(CLUSTER_GVK, field_selector=by_name)
        assert [c["metadata"]["name"] for c in own["items"]] == [pull]
        async with agent.watch(CLUSTER_GVK, field_selector=by_name, timeout_seconds=1):
            pass
        mine_cluster = await agent.get(CLUSTER_GVK, pull)
        mine_cluster["spec"]["apiEndpoint"] = "https://member.example:6443"
        mine_cluster = await agent.update(mine_cluster)
        mine_cluster["status"] = {"kubernetesVersion": "v1.30.0"}
        await agent.update_status(mine_cluster)
        # Its heartbeat Lease, which register created.
        lease = await agent.get(LEASE, pull, namespace="karmada-cluster")
        lease["spec"]["renewTime"] = "2026-01-01T00:00:00.000000Z"
        await agent.update(lease)

        # Anything else: 403.
        other_works = execution_namespace(other)
        await _forbidden(agent.list(WORK_GVK, namespace=other_works))
        await _forbidden(agent.get(WORK_GVK, "w1", namespace=other_works))
        await _forbidden(agent.update(theirs))
        await _forbidden(agent.create(_event(other_works, theirs)))
        await _forbidden(agent.delete(WORK_GVK, "w1", namespace=works))
        await _forbidden(agent.create(_work(pull, "w2")))
        await _forbidden(agent.list(SECRET, namespace="karmada-cluster"))
        await _forbidden(agent.list(SECRET, namespace=works))
        await _forbidden(agent.list(SECRET))
        await _forbidden(agent.get(CLUSTER_GVK, other))
        await _forbidden(agent.list(CLUSTER_GVK))
        await _forbidden(agent.create(cluster(f"new-{secrets.token_hex(3)}")))
        await _forbidden(agent.delete(CLUSTER_GVK, pull))
        await _forbidden(agent.get(LEASE, other, namespace="karmada-cluster"))
        await _forbidden(
            agent.create(
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": other, "namespace": "karmada-cluster"},
                    "spec": {},
                }
            )
        )
    await delete_and_wait(admin, CLUSTER_GVK, other)


async def test_a_push_or_another_agents_cluster_is_refused_and_refresh_only_mints(
    karmada_client: Client, pull: str, tmp_path: Path
) -> None:
    admin = karmada_client
    push = f"push-{secrets.token_hex(3)}"
    await admin.create(cluster(push))
    with pytest.raises(RegisterError, match="Push mode: not taken over"):
        await register_cluster(push, host=admin)
    with pytest.raises(RegisterError, match="not found: register it first"):
        await register_cluster(pull, host=admin, refresh=True)
    first = await register_cluster(pull, host=admin)
    # Another cluster namespace is another agent identity: no takeover.
    with pytest.raises(RegisterError, match="karmada-cluster/karmada-agent-pull-"):
        await register_cluster(pull, host=admin, cluster_namespace="elsewhere")
    # Nor a Pull Cluster no register made (an agent that registered itself, say).
    foreign = f"foreign-{secrets.token_hex(3)}"
    await admin.create({**cluster(foreign), "spec": {"syncMode": "Pull"}})
    with pytest.raises(RegisterError, match="an agent register did not make"):
        await register_cluster(foreign, host=admin)
    assert await gone(
        admin, GVK("", "v1", "ServiceAccount"), f"karmada-agent-{foreign}", "karmada-cluster"
    )

    # --refresh: a new token for the same identity, nothing else written.
    before = await admin.get(CLUSTER_GVK, pull)
    refreshed = await register_cluster(pull, host=admin, refresh=True)
    assert refreshed.identity == first.identity
    assert refreshed.kubeconfig != first.kubeconfig
    assert (await admin.get(CLUSTER_GVK, pull))["metadata"]["resourceVersion"] == (
        before["metadata"]["resourceVersion"]
    )
    async with await _agent(tmp_path, refreshed.kubeconfig) as agent:
        await agent.get(CLUSTER_GVK, pull)
    # Registering again under the same identity is harmless.
    again = await register_cluster(pull, host=admin)
    assert again.identity == first.identity
    annotations = (await admin.get(CLUSTER_GVK, pull))["metadata"]["annotations"]
    assert annotations[AGENT_ANNOTATION] == str(first.identity)
    for name in (push, foreign):
        await delete_and_wait(admin, CLUSTER_GVK, name)


async def test_the_command_writes_a_private_kubeconfig_and_unjoin_leaves_nothing(
    host: ControlPlane, karmada_client: Client, pull: str, tmp_path: Path
) -> None:
    output = tmp_path / "agent.kubeconfig"
    done = await anyio.run_process(
        [
            sys.executable,
            "-m",
            "controllers.cli",
            "register",
            pull,
            "--kubeconfig",
            str(host.kubeconfig),
            "--output",
            str(output),
        ],
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert f"registered: cluster {pull} (Pull)" in done.stdout.decode()
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    async with await _agent(tmp_path, output.read_text()) as agent:
        await agent.get(CLUSTER_GVK, pull)
    refused = await anyio.run_process(
        [
            sys.executable,
            "-m",
            "controllers.cli",
            "register",
            pull,
            "--kubeconfig",
            str(host.kubeconfig),
            "--cluster-namespace",
            "elsewhere",
        ],
        check=False,
    )
    assert refused.returncode == 1
    assert refused.stderr.decode().startswith(f"register: Cluster {pull} is a Pull cluster of ")

    # Without --output the kubeconfig alone goes to stdout (a pipe), the summary to stderr.
    renewed = await anyio.run_process(
        [
            sys.executable,
            "-m",
            "controllers.cli",
            "register",
            pull,
            "--refresh",
            "--kubeconfig",
            str(host.kubeconfig),
        ],
        check=False,
    )
    assert renewed.returncode == 0, renewed.stderr.decode()
    assert renewed.stderr.decode().startswith(f"token renewed: cluster {pull} (Pull)")
    async with await _agent(tmp_path, renewed.stdout.decode()) as agent:
        await agent.get(CLUSTER_GVK, pull)

    identity = AgentIdentity.of(pull, "karmada-cluster")
    targets = agent_targets(pull, identity)
    for gvk, name, namespace in targets:
        assert not await gone(karmada_client, gvk, name, namespace), (gvk.kind, name)
    out = io.StringIO()
    await run_unjoin(pull, host=karmada_client, member=None, out=out)
    for gvk, name, namespace in targets:
        assert await gone(karmada_client, gvk, name, namespace), (gvk.kind, name)
    assert await gone(karmada_client, CLUSTER_GVK, pull)
    assert f'serviceaccount "karmada-agent-{pull}"' in out.getvalue()
    assert "secret" not in out.getvalue(), "a Pull cluster has no Secret to guess"
