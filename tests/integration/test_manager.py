"""Manager, Builder and the example controller against the real kube-apiserver."""

from __future__ import annotations

import os
import secrets
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from examples.replicaset import POD_COUNT_LABEL, setup
from reconcile import (
    GVK,
    BuilderError,
    Client,
    ClusterConfig,
    Forbidden,
    Manager,
    ManagerOptions,
    NotLeader,
    Request,
    Result,
    controller_managed_by,
    predicate,
)
from testenv import ControlPlane, User, consistently, eventually, manager_for, running
from tests.builders import deployment, scaled

pytestmark = pytest.mark.asyncio(loop_scope="session")

REPLICASET = GVK("apps", "v1", "ReplicaSet")
POD = GVK("", "v1", "Pod")
CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
LEASE_DURATION = scaled(2.0)
RETRY_PERIOD = scaled(0.3)
SLOW_MANAGER = Path(__file__).parent / "testdata" / "slow_manager.py"


def _replicaset(name: str, namespace: str) -> dict[str, Any]:
    return deployment(name, namespace, 2, kind="ReplicaSet")


def _pod(name: str, namespace: str, owner: dict[str, Any], app: str) -> dict[str, Any]:
    reference = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": app},
            "ownerReferences": [reference],
        },
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


async def test_the_example_labels_replicasets_with_their_pod_count(
    host: ControlPlane, namespace: str
) -> None:
    manager = await manager_for(host)
    setup(manager)
    client = manager.api_reader
    async with running(manager):
        rs = await client.create(_replicaset("web", namespace))

        async def count_is(expected: str) -> bool:
            current = await client.get(REPLICASET, "web", namespace=namespace)
            return bool(current["metadata"].get("labels", {}).get(POD_COUNT_LABEL) == expected)

        await eventually(lambda: count_is("0"), timeout=20)
        # Owned objects enqueue their owner: each pod change re-counts.
        await client.create(_pod("web-1", namespace, rs, "web"))
        await client.create(_pod("web-2", namespace, rs, "web"))
        await eventually(lambda: count_is("2"), timeout=20)
        await client.delete(POD, "web-1", namespace=namespace, grace_period_seconds=0)
        await eventually(lambda: count_is("1"), timeout=20)


async def test_predicates_filter_and_owned_changes_enqueue_the_owner(
    host: ControlPlane, namespace: str
) -> None:
    manager = await manager_for(host)
    seen: Counter[str] = Counter()

    async def record(request: Request) -> Result | None:
        if request.namespace == namespace:
            seen[request.name] += 1
        return None

    (
        controller_managed_by(manager)
        .for_(REPLICASET, predicate.generation_changed)
        .owns(POD)
        .named("filtered")
        .complete(record)
    )
    client = manager.api_reader
    async with running(manager):
        rs = await client.create(_replicaset("app", namespace))

        async def reconciled(times: int) -> bool:
            return seen["app"] >= times

        await eventually(lambda: reconciled(1), timeout=20)
        before = seen["app"]
        # A label change does not bump the generation: it must be filtered out. To know it was
        # seen (not merely not yet delivered), a marker follows it on the same watch: events reach
        # the handlers in order and one worker takes keys first in, first out, so had the label
        # change been let through, "app" would be reconciled before "marker" is.
        await client.patch(
            REPLICASET, "app", {"metadata": {"labels": {"x": "y"}}}, namespace=namespace
        )
        await client.create(_replicaset("marker", namespace))
        await eventually(lambda: _value(seen["marker"] >= 1), timeout=20)
        assert seen["app"] == before, "a label-only change passed generation_changed"
        # A spec change does bump it: reconciled again.
        await client.patch(REPLICASET, "app", {"spec": {"replicas": 5}}, namespace=namespace)
        await eventually(lambda: reconciled(before + 1), timeout=20)
        await client.create(_pod("owned", namespace, rs, "app"))
        await eventually(lambda: reconciled(before + 2), timeout=20)


async def test_builder_misuse_is_reported_clearly(host: ControlPlane) -> None:
    manager = await manager_for(host)

    async def noop(request: Request) -> Result | None:
        return None

    with pytest.raises(BuilderError, match="for_"):
        controller_managed_by(manager).complete(noop)
    with pytest.raises(BuilderError, match="before for_"):
        controller_managed_by(manager).owns(POD).for_(REPLICASET).complete(noop)
    controller_managed_by(manager).for_(REPLICASET).complete(noop)
    with pytest.raises(BuilderError, match="exists already"):
        controller_managed_by(manager).for_(REPLICASET).complete(noop)


async def test_readyz_waits_for_caches_and_metrics_use_controller_runtime_names(
    host: ControlPlane, namespace: str
) -> None:
    manager = await manager_for(host, health_probe_bind_address="127.0.0.1:0")

    async def noop(request: Request) -> Result | None:
        return None

    controller_managed_by(manager).for_(CONFIGMAP).complete(noop)
    async with running(manager), aiohttp.ClientSession() as http:
        probes = f"http://127.0.0.1:{manager.probe_port}"
        # An informer that cannot sync (a kind nobody serves) keeps /readyz failing.
        manager.cache.get_informer(GVK("example.invalid", "v1", "Nothing"))
        async with http.get(f"{probes}/readyz") as response:
            assert response.status == 500
            assert "caches" in await response.text()
        async with http.get(f"{probes}/healthz") as response:
            assert response.status == 200
        async with http.get(f"http://127.0.0.1:{manager.metrics_port}/metrics") as response:
            text = await response.text()
        for name in (
            'controller_runtime_reconcile_total{controller="configmap",result="success"}',
            "controller_runtime_max_concurrent_reconciles",
            "controller_runtime_active_workers",
            'workqueue_depth{controller="configmap",name="configmap"}',
            "workqueue_adds_total",
            "leader_election_master_status",
        ):
            assert name in text, name

    ready_manager = await manager_for(host, health_probe_bind_address="127.0.0.1:0")
    controller_managed_by(ready_manager).for_(CONFIGMAP).complete(noop)
    async with running(ready_manager), aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{ready_manager.probe_port}/readyz"

        async def ready() -> bool:
            async with http.get(url) as response:
                return response.status == 200

        await eventually(ready, timeout=20)


async def test_readyz_fails_while_rbac_refuses_a_cache_its_list(
    host: ControlPlane, namespace: str
) -> None:
    nobody = await host.add_user(f"cannot-list-secrets-{secrets.token_hex(3)}")
    # The user really is refused (else the failing probe below would prove nothing) ...
    async with await _client_of(nobody) as as_nobody:
        with pytest.raises(Forbidden) as refused:
            await as_nobody.list(SECRET, namespace=namespace)
    assert refused.value.code == 403
    assert nobody.name in refused.value.message
    # ... and a manager running as that user never reports ready while its Secret informer is.
    config = await ClusterConfig.from_kubeconfig(
        nobody.kubeconfig, temp_dir=host.directory / "client"
    )
    options = ManagerOptions(metrics_bind_address="0", health_probe_bind_address="127.0.0.1:0")
    manager = Manager(config, options=options)
    async with running(manager), aiohttp.ClientSession() as http:
        manager.cache.get_informer(SECRET)
        url = f"http://127.0.0.1:{manager.probe_port}/readyz"

        async def not_ready() -> bool:
            async with http.get(url) as response:
                return response.status == 500 and "caches" in await response.text()

        await consistently(not_ready, duration=scaled(1.0))


async def _client_of(user: User) -> Client:
    config = await ClusterConfig.from_kubeconfig(user.kubeconfig)
    return Client(config)


async def test_two_managers_elect_one_leader_and_hand_over(
    host: ControlPlane, namespace: str
) -> None:
    reconciled_by: list[str] = []
    lease = {
        "leader_election": True,
        "leader_election_id": f"lease-{namespace}",
        "leader_election_namespace": namespace,
        "lease_duration": LEASE_DURATION,
        "renew_deadline": scaled(1.5),
        "retry_period": RETRY_PERIOD,
        # Released once the first manager stopped (off by default, as in controller-runtime).
        "leader_election_release_on_cancel": True,
    }

    def build(identity: str, manager: Manager) -> None:
        async def reconcile(request: Request) -> Result | None:
            if request.namespace == namespace:
                reconciled_by.append(identity)
            return None

        controller_managed_by(manager).for_(CONFIGMAP).complete(reconcile)

    first, second = await manager_for(host, **lease), await manager_for(host, **lease)
    build("first", first)
    build("second", second)
    async with anyio.create_task_group() as group:
        await group.start(first.start)
        with anyio.fail_after(10):
            await first.elected.wait()
        await group.start(second.start)
        await host.request(
            "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "one"}}
        )
        await eventually(lambda: _value(bool(reconciled_by)), timeout=20)
        assert set(reconciled_by) == {"first"}
        assert not second.elected.is_set()
        with pytest.raises(NotLeader):
            await second.client.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "x", "namespace": namespace},
                }
            )
        # A clean stop releases the Lease (as asked): the standby leads at its next try. Expiry
        # would take at least the lease duration less one (jittered) retry from the last renewal
        # before the stop.
        stopped = anyio.current_time()
        first.stop()
        with anyio.fail_after(scaled(10)):
            await second.elected.wait()
        took = anyio.current_time() - stopped
        assert took < LEASE_DURATION - RETRY_PERIOD * 1.2, (
            f"the Lease was not released ({took:.2f}s)"
        )
        await host.request(
            "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "two"}}
        )
        await eventually(lambda: _value("second" in reconciled_by), timeout=20)
        second.stop()


async def _value(value: bool) -> bool:
    return value


async def test_sigterm_lets_a_slow_reconcile_finish_and_exits_zero(
    host: ControlPlane, namespace: str
) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    argv = [sys.executable, str(SLOW_MANAGER), str(host.kubeconfig), namespace]
    async with await anyio.open_process(argv, env=env) as process:
        assert process.stdout is not None
        output = b""
        with anyio.fail_after(60):
            while b"manager started" not in output:
                output += await process.stdout.receive()
            await host.request(
                "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "slow"}}
            )
            while b"reconcile started" not in output:
                output += await process.stdout.receive()
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(30):
            code = await process.wait()
            async for chunk in process.stdout:
                output += chunk
    assert b"reconcile finished" in output, output.decode()
    assert code == 0, output.decode()
