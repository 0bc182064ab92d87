"""``reconcile taint``, ``cordon`` and ``uncordon`` run as an operator runs them, on a real host.

Each test runs the real command line (``python -m controllers.cli``) against the testenv host's
admin kubeconfig, on a Cluster of its own that already carries a taint the command was not asked
about (``cluster.karmada.io/not-ready``, as the taint controllers write it), and reads the
Cluster back to see what changed.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
import pytest_asyncio

from controllers.api import CLUSTER_GVK, Taint
from controllers.commands.clustertaints import edit_cluster_taints
from controllers.commands.taint import reorganize_taints
from controllers.commands.taintspec import parse_taints
from reconcile import GVK, Client
from testenv import ControlPlane, eventually
from tests.builders import cluster, delete_and_wait, gone

pytestmark = pytest.mark.asyncio(loop_scope="session")

NOT_READY = Taint(key="cluster.karmada.io/not-ready", effect="NoSchedule")
SECRET = GVK("", "v1", "Secret")
UNSCHEDULABLE = Taint(key="cluster.karmada.io/unschedulable", effect="NoSchedule")


async def reconcile(host: ControlPlane, *argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``reconcile ARGV --kubeconfig <host admin>``."""
    done = await anyio.run_process(
        [sys.executable, "-m", "controllers.cli", *argv, "--kubeconfig", str(host.kubeconfig)],
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@pytest_asyncio.fixture(loop_scope="session")
async def member(karmada_client: Client) -> AsyncIterator[str]:
    """A Cluster of this test's own, with a not-ready taint a controller put there."""
    name = f"cmd-{secrets.token_hex(3)}"
    await karmada_client.create(cluster(name, taints=[dict(NOT_READY)]))
    yield name
    await delete_and_wait(karmada_client, CLUSTER_GVK, name)


async def taints_of(client: Client, name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await client.get(CLUSTER_GVK, name))["spec"].get("taints", [])
    return found


async def test_taint_adds_overwrites_and_removes_only_the_taints_named(
    host: ControlPlane, karmada_client: Client, member: str
) -> None:
    status, out, _ = await reconcile(host, "taint", member, "dedicated=special-user:NoSchedule")
    assert (status, out) == (0, f"cluster/{member} tainted\n")
    assert await taints_of(karmada_client, member) == [
        NOT_READY,
        {"key": "dedicated", "value": "special-user", "effect": "NoSchedule"},
    ]

    status, _, err = await reconcile(host, "taint", member, "dedicated=other:NoSchedule")
    assert status == 1
    assert err == (
        f"taint: cluster {member} already has dedicated taint(s) with same effect(s) and "
        "--overwrite is false\n"
    )
    status, out, _ = await reconcile(
        host, "taint", member, "dedicated=other:NoSchedule", "--overwrite"
    )
    assert (status, out) == (0, f"cluster/{member} modified\n")
    assert (await taints_of(karmada_client, member))[1]["value"] == "other"

    status, out, _ = await reconcile(host, "taint", member, "dedicated-")
    assert (status, out) == (0, f"cluster/{member} untainted\n")
    assert await taints_of(karmada_client, member) == [NOT_READY]


async def test_a_no_execute_taint_gets_time_added_and_dry_run_writes_nothing(
    host: ControlPlane, karmada_client: Client, member: str
) -> None:
    before = await karmada_client.get(CLUSTER_GVK, member)
    status, out, _ = await reconcile(host, "taint", member, "evict=now:NoExecute", "--dry-run")
    assert (status, out) == (0, f"cluster/{member} tainted (dry run)\n")
    after = await karmada_client.get(CLUSTER_GVK, member)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    status, _, _ = await reconcile(host, "taint", "clusters", member, "evict=now:NoExecute")
    assert status == 0
    added = (await taints_of(karmada_client, member))[1]
    assert (added["key"], added["effect"]) == ("evict", "NoExecute")
    age = datetime.now(UTC) - datetime.fromisoformat(added["timeAdded"])
    assert timedelta(0) <= age < timedelta(minutes=5), "the time the taint was added"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ("taint", "no-such-cluster", "a:NoSchedule"),
            'taint: cluster "no-such-cluster" not found',
            id="taint",
        ),
        pytest.param(
            ("cordon", "no-such-cluster"),
            'cordon: cluster "no-such-cluster" not found',
            id="cordon",
        ),
        pytest.param(
            ("uncordon", "no-such-cluster"),
            'uncordon: cluster "no-such-cluster" not found',
            id="uncordon",
        ),
        pytest.param(
            ("taint", "x", "a:Sometimes"),
            "taint: invalid taint effect: Sometimes, unsupported taint effect",
            id="malformed taint",
        ),
        pytest.param(
            ("taint", "x", "a:NoSchedule-"),
            'taint: cluster "x" not found',
            id="removal, no cluster",
        ),
    ],
)
async def test_a_wrong_cluster_or_a_malformed_taint_is_one_line_and_exit_1(
    host: ControlPlane, karmada_crds: None, argv: tuple[str, ...], message: str
) -> None:
    status, out, err = await reconcile(host, *argv)
    assert (status, out, err) == (1, "", message + "\n")


async def test_removing_a_taint_the_cluster_lacks_fails_and_writes_nothing(
    host: ControlPlane, karmada_client: Client, member: str
) -> None:
    before = await karmada_client.get(CLUSTER_GVK, member)
    status, _, err = await reconcile(host, "taint", member, "absent:NoSchedule-")
    assert (status, err) == (1, 'taint: taint "absent:NoSchedule" not found\n')
    after = await karmada_client.get(CLUSTER_GVK, member)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_cordon_twice_is_a_no_op_and_uncordon_leaves_other_taints(
    host: ControlPlane, karmada_client: Client, member: str
) -> None:
    assert await reconcile(host, "cordon", member) == (0, f"{member} cluster cordoned\n", "")
    assert await taints_of(karmada_client, member) == [NOT_READY, UNSCHEDULABLE]
    written = (await karmada_client.get(CLUSTER_GVK, member))["metadata"]["resourceVersion"]
    again = await reconcile(host, "cordon", member)
    assert again == (0, f"{member} cluster already cordoned\n", "")
    current = (await karmada_client.get(CLUSTER_GVK, member))["metadata"]["resourceVersion"]
    assert current == written, "cordoning a cordoned cluster writes nothing"

    assert await reconcile(host, "uncordon", member) == (0, f"{member} cluster uncordoned\n", "")
    assert await taints_of(karmada_client, member) == [NOT_READY]
    again = await reconcile(host, "uncordon", member)
    assert again == (0, f"{member} cluster already uncordoned\n", "")


class RacingClient(Client):
    """A client whose first Cluster update loses a race: another writer (a taint controller)
    adds a taint between the command's read and its write."""

    updates = 0

    async def update(self, obj: Any, **options: Any) -> Any:
        self.updates += 1
        if self.updates == 1:
            fresh = await self.get(CLUSTER_GVK, obj["metadata"]["name"])
            fresh["spec"]["taints"].append({"key": "racer", "effect": "NoSchedule"})
            await super().update(fresh)
        return await super().update(obj, **options)


async def test_a_conflicting_write_is_retried_from_a_fresh_read_and_kept(
    karmada_client: Client, member: str
) -> None:
    change = parse_taints(["mine=1:NoSchedule"])
    racing = RacingClient(karmada_client.config)
    try:
        word = await edit_cluster_taints(
            racing, member, lambda taints: reorganize_taints(member, taints, change)
        )
    finally:
        await racing.close()
    assert racing.updates == 2, "the first update lost the race (Conflict), the second won"
    assert word == "tainted"
    assert await taints_of(karmada_client, member) == [
        NOT_READY,
        {"key": "racer", "effect": "NoSchedule"},
        {"key": "mine", "value": "1", "effect": "NoSchedule"},
    ]


async def test_unjoin_gives_up_after_wait_and_a_second_run_finishes(
    host: ControlPlane, karmada_client: Client, namespace: str
) -> None:
    # No controller-manager runs: the cluster controller's finalizer holds the Cluster.
    held = cluster(namespace, secretRef={"namespace": namespace, "name": namespace})
    held["metadata"]["finalizers"] = ["karmada.io/cluster-controller"]
    await karmada_client.create(held)
    meta = {"name": namespace, "namespace": namespace}
    await karmada_client.create({"apiVersion": "v1", "kind": "Secret", "metadata": meta})
    unjoin = ("unjoin", namespace, "--cluster-namespace", namespace)
    try:
        status, out, err = await reconcile(host, *unjoin, "--wait", "1s")
        assert status == 1
        assert out == f'cluster.cluster.karmada.io "{namespace}" deleted\n'
        assert err.startswith(f"unjoin: cluster {namespace} still exists after 1s")
        assert "karmada.io/cluster-controller" in err
        assert not await gone(karmada_client, SECRET, namespace, namespace), "kept: finalizer"
    finally:
        await karmada_client.patch(CLUSTER_GVK, namespace, {"metadata": {"finalizers": None}})
    await eventually(lambda: gone(karmada_client, CLUSTER_GVK, namespace), timeout=30)

    assert await reconcile(host, *unjoin) == (
        0,
        f'secret "{namespace}" in namespace {namespace} deleted\n'
        f"cluster {namespace} unjoined (the Cluster was already gone)\n",
        "",
    )
    assert await gone(karmada_client, SECRET, namespace, namespace)
    assert await reconcile(host, *unjoin) == (1, "", f'unjoin: cluster "{namespace}" not found\n')
