"""End to end: ``reconcile get`` and ``reconcile unjoin`` run by an operator against host + members.

The commands run as subprocesses (``python -m controllers.cli``) with the testenv host's admin
kubeconfig while the whole controller-manager runs in the test. ``get`` reads what the Works
report of a Deployment divided 2:1 over member1 and member2. ``unjoin`` removes a Cluster joined
for the test only (member1's apiserver registered again under the test namespace's name, so
member1 and member2 stay joined for the other tests), after the controllers have put a ConfigMap
there through it.
"""

from __future__ import annotations

import contextlib
import sys

import anyio
import pytest

from controllers.api import CLUSTER_GVK, KARMADA_CLUSTER_NAMESPACE
from controllers.cluster import ClusterStatusOptions, clusters_ready
from controllers.join import cluster_role_name, service_account_name
from reconcile import GVK, NotFound
from testenv import Environment, eventually
from tests.builders import CONFIGMAP, SERVICE_ACCOUNT, configmap, gone, propagation_policy
from tests.e2e.stack import Stack, new_deployment, new_policy, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

FAST = ClusterStatusOptions(update_frequency=1.0, failure_threshold=4.0, success_threshold=1.0)
SECRET = GVK("", "v1", "Secret")
NAMESPACE = GVK("", "v1", "Namespace")
CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
CLUSTER_ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")


async def reconcile(env: Environment, *argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``reconcile ARGV --kubeconfig <host admin>``."""
    done = await anyio.run_process(
        [sys.executable, "-m", "controllers.cli", *argv, "--kubeconfig", str(env.host.kubeconfig)],
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_get_lists_one_row_per_member_copy(joined: Environment, namespace: str) -> None:
    async with running(joined, namespace, health=FAST) as stack:
        await _get_lists_one_row_per_member_copy(stack)


async def _get_lists_one_row_per_member_copy(stack: Stack) -> None:
    ns, env = stack.namespace, stack.env
    await stack.host.create(new_deployment("nginx", ns, 3))
    await stack.host.create(new_policy("nginx", ns, "nginx"))
    await stack.wait_replicas("nginx", {"member1": 2, "member2": 1})
    await stack.report_ready("nginx")
    expected = [
        ["NAME", "CLUSTER", "READY", "APPLIED", "HEALTH"],
        ["nginx", "member1", "2/2", "True", "Healthy"],
        ["nginx", "member2", "1/1", "True", "Healthy"],
    ]

    async def listed() -> bool:
        status, out, _ = await reconcile(env, "get", "deployments", "-n", ns)
        return status == 0 and [line.split() for line in out.splitlines()] == expected

    # The execution controller reflects the members' status into the Works in its own time.
    await eventually(listed, timeout=60, interval=0.5)

    status, out, _ = await reconcile(env, "get", "deploy", "nginx", "-n", ns, "-C", "member2")
    assert status == 0
    assert [line.split() for line in out.splitlines()] == [expected[0], expected[2]]
    status, out, _ = await reconcile(env, "get", "deployments.apps", "-A")
    assert status == 0
    assert ["NAMESPACE", *expected[0]] == out.splitlines()[0].split()
    assert [ns, *expected[1]] in [line.split() for line in out.splitlines()]

    assert await reconcile(env, "get", "configmaps", "-n", ns) == (
        0,
        "",
        f"No resources found in {ns} namespace.\n",
    )
    refusals = {
        ("get", "deployments", "absent", "-n", ns): (
            'get: deployments.apps "absent" not found in any member cluster'
        ),
        ("get", "widgets"): 'get: the server doesn\'t have a resource type "widgets"',
        ("get", "deployments", "-C", "no-such-cluster"): (
            'get: cluster "no-such-cluster" not found'
        ),
    }
    for argv, message in refusals.items():
        assert await reconcile(env, *argv) == (1, "", message + "\n"), argv


async def test_unjoin_removes_the_cluster_its_secret_and_what_join_made_in_the_member(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace, health=FAST) as stack:
        try:
            await _unjoin_removes_what_join_made(stack, namespace)
        finally:
            # A Cluster left behind would get later tests' placements: remove it whatever failed.
            with contextlib.suppress(NotFound):
                await stack.host.delete(CLUSTER_GVK, namespace)
            await eventually(lambda: gone(stack.host, CLUSTER_GVK, namespace), timeout=60)


async def _unjoin_removes_what_join_made(stack: Stack, name: str) -> None:
    env, ns, member1 = stack.env, stack.namespace, stack.members["member1"]
    member_kubeconfig = str(env.members["member1"].kubeconfig)
    status, _, err = await reconcile(env, "join", name, "--cluster-kubeconfig", member_kubeconfig)
    assert status == 0, err
    await eventually(lambda: clusters_ready(stack.host, [name]), timeout=60, interval=0.5)
    # Something the controllers put in the member through this Cluster only.
    await stack.host.create(configmap("probe", ns, through="unjoined"))
    placement = {"clusterAffinity": {"clusterNames": [name]}}
    selector = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "probe"}]
    await stack.host.create(propagation_policy("probe", ns, selector, placement))

    async def probe_in_member() -> bool:
        return not await gone(member1, CONFIGMAP, "probe", ns)

    await eventually(probe_in_member, timeout=60, interval=0.5)

    argv = ("unjoin", name, "--cluster-kubeconfig", member_kubeconfig)
    status, out, _ = await reconcile(env, *argv, "--dry-run")
    assert status == 0
    assert f'cluster.cluster.karmada.io "{name}" would be deleted (dry run)' in out
    assert not await gone(stack.host, CLUSTER_GVK, name), "a dry run deletes nothing"

    status, out, err = await reconcile(env, *argv, "--wait", "60s")
    assert (status, err) == (0, "")
    assert out.splitlines()[0] == f'cluster.cluster.karmada.io "{name}" deleted'
    assert out.splitlines()[-1] == f"cluster {name} unjoined"
    assert await gone(stack.host, CLUSTER_GVK, name)
    assert await gone(stack.host, SECRET, name, KARMADA_CLUSTER_NAMESPACE)
    # The finalizer ran before the credentials went: the member object is gone too.
    assert await gone(member1, CONFIGMAP, "probe", ns)
    account = service_account_name(name)
    assert await gone(member1, SERVICE_ACCOUNT, account, KARMADA_CLUSTER_NAMESPACE)
    assert await gone(member1, CLUSTER_ROLE, cluster_role_name(name))
    assert await gone(member1, CLUSTER_ROLE_BINDING, cluster_role_name(name))
    # member1's own join, and the namespace it lives in, are untouched.
    await member1.get(SERVICE_ACCOUNT, service_account_name("member1"), namespace="karmada-cluster")
    await member1.get(CLUSTER_ROLE, cluster_role_name("member1"))
    assert await clusters_ready(stack.host, ["member1", "member2"])

    again = await reconcile(env, "unjoin", name)
    assert again == (1, "", f'unjoin: cluster "{name}" not found\n')
