"""Demo runs ``reconcile demo``: the whole system on an embedded default, nothing to set up.

A testenv host and two members (real kube-apiservers on one etcd), the Karmada CRDs, both members
joined as ``reconcile join`` does, the controller-manager running in-process; then the nginx
Deployment (3 replicas) and a PropagationPolicy dividing it 2:1 between member1 and member2. It
prints progress as the Deployment propagates, writes each member Deployment's status itself
(testenv runs no kube-controller-manager, so nothing else would), waits for the aggregated status
on the template, prints a table and exits 0 — or non-zero, saying what did not happen in time.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import anyio

from controllers.api import (
    RESOURCE_BINDING_GVK,
    WORK_GVK,
    crd_paths,
    execution_namespace,
)
from controllers.binding import binding_name, work_name
from controllers.cluster import clusters_ready
from controllers.controllermanager import build
from controllers.join import join_cluster
from reconcile import (
    GVK,
    Client,
    ClusterConfig,
    Manager,
    ManagerOptions,
    NotFound,
    get_condition,
)
from testenv import ControlPlane, Environment

__all__ = ["DEMO_MEMBERS", "run_demo"]

DEMO_MEMBERS: Final = ("member1", "member2")
DEPLOYMENT: Final = GVK("apps", "v1", "Deployment")
NAMESPACE: Final = "default"
DEADLINE: Final = 120.0

NGINX: Final[dict[str, Any]] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "nginx", "namespace": NAMESPACE, "labels": {"app": "nginx"}},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
        },
    },
}

POLICY: Final[dict[str, Any]] = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {"name": "nginx-propagation", "namespace": NAMESPACE},
    "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
        "placement": {
            "clusterAffinity": {"clusterNames": list(DEMO_MEMBERS)},
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {
                    "staticWeightList": [
                        {"targetCluster": {"clusterNames": ["member1"]}, "weight": 2},
                        {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1},
                    ]
                },
            },
        },
    },
}


def _say(message: str, started: float) -> None:
    print(f"[{time.monotonic() - started:5.1f}s] {message}", flush=True)


async def _client(plane: ControlPlane) -> Client:
    config = await ClusterConfig.from_kubeconfig(
        plane.kubeconfig, temp_dir=plane.directory / "client"
    )
    return Client(config, field_manager="reconcile-demo")


async def _until(what: str, probe: Callable[[], Awaitable[Any]], deadline: float) -> Any:
    """Poll ``probe`` until it returns something truthy; raise with ``what`` at the deadline."""
    while anyio.current_time() < deadline:
        try:
            found = await probe()
        except NotFound:
            found = None
        if found:
            return found
        await anyio.sleep(0.25)
    raise TimeoutError(f"timed out waiting for {what}")


async def _write_member_status(member: Client) -> dict[str, Any]:
    """Play the member's kube-controller-manager: report every replica ready."""
    deployment = await member.get(DEPLOYMENT, "nginx", namespace=NAMESPACE)
    replicas = int(deployment["spec"].get("replicas") or 0)
    deployment["status"] = {
        "observedGeneration": deployment["metadata"]["generation"],
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
    }
    return await member.update_status(deployment)


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows
    )


async def _propagate(env: Environment, started: float) -> list[list[str]]:
    deadline = anyio.current_time() + DEADLINE
    host = await _client(env.host)
    members = {name: await _client(plane) for name, plane in env.members.items()}
    async with host:
        for name, plane in env.members.items():
            result = await join_cluster(name, host=host, member_kubeconfig=str(plane.kubeconfig))
            _say(f"joined {name} ({result.endpoint}) with a TokenRequest token", started)
        config = await ClusterConfig.from_kubeconfig(
            env.host.kubeconfig, temp_dir=env.host.directory / "client"
        )
        manager = Manager(config, options=ManagerOptions(metrics_bind_address="0"))
        build(manager, scratch=env.host.directory / "client")
        async with anyio.create_task_group() as group:
            await group.start(manager.start)
            _say("controller-manager started (all controllers, in-process)", started)
            # Scheduled while one member is not Ready yet, the 2:1 split would all go to the other.
            await _until("both members Ready", lambda: clusters_ready(host, members), deadline)
            _say("member1 and member2 are Ready (their served APIs known)", started)
            await host.create(NGINX)
            await host.create(POLICY)
            _say("created Deployment default/nginx (3 replicas) and PropagationPolicy 2:1", started)
            rows = await _follow(host, members, started, deadline)
            manager.stop()
        for client in members.values():
            await client.close()
    return rows


async def _follow(
    host: Client, members: dict[str, Client], started: float, deadline: float
) -> list[list[str]]:
    rb = binding_name("Deployment", "nginx")
    binding = await _until("the ResourceBinding", lambda: _scheduled(host, rb), deadline)
    targets = {c["name"]: c.get("replicas", 0) for c in binding["spec"]["clusters"]}
    _say(f"ResourceBinding {rb} scheduled: {targets}", started)
    works = {}
    for name in members:
        work = work_name("Deployment", "nginx", NAMESPACE)
        works[name] = await _until(
            f"Work {work} applied to {name}",
            lambda n=name, w=work: _applied(host, n, w),  # type: ignore[misc]
            deadline,
        )
        _say(f"Work {execution_namespace(name)}/{work} applied", started)
    for name, member in members.items():
        await _until(
            f"the Deployment in {name}",
            lambda m=member: m.get(DEPLOYMENT, "nginx", namespace=NAMESPACE),  # type: ignore[misc]
            deadline,
        )
        await _write_member_status(member)
        _say(f"{name}: Deployment present; status written (all replicas ready)", started)
    template = await _until("the aggregated status", lambda: _aggregated(host), deadline)
    _say(f"template status aggregated: {template['status']}", started)
    return await _rows(members, works, template)


async def _scheduled(host: Client, name: str) -> dict[str, Any] | None:
    binding = await host.get(RESOURCE_BINDING_GVK, name, namespace=NAMESPACE)
    return binding if binding["spec"].get("clusters") else None


async def _applied(host: Client, cluster: str, name: str) -> dict[str, Any] | None:
    work = await host.get(WORK_GVK, name, namespace=execution_namespace(cluster))
    condition = get_condition(work, "Applied") or {}
    return work if condition.get("status") == "True" else None


async def _aggregated(host: Client) -> dict[str, Any] | None:
    template = await host.get(DEPLOYMENT, "nginx", namespace=NAMESPACE)
    status = template.get("status") or {}
    return template if status.get("readyReplicas") == NGINX["spec"]["replicas"] else None


async def _rows(
    members: dict[str, Client], works: dict[str, dict[str, Any]], template: dict[str, Any]
) -> list[list[str]]:
    rows = [["CLUSTER", "DEPLOYMENT REPLICAS", "READY", "WORK APPLIED"]]
    for name, member in members.items():
        deployment = await member.get(DEPLOYMENT, "nginx", namespace=NAMESPACE)
        applied = (get_condition(works[name], "Applied") or {}).get("reason", "")
        status = deployment.get("status") or {}
        rows.append(
            [name, str(deployment["spec"]["replicas"]), str(status.get("readyReplicas")), applied]
        )
    status = template["status"]
    rows.append(["(template)", str(template["spec"]["replicas"]), str(status["readyReplicas"]), ""])
    return rows


async def run_demo(members: Sequence[str] = DEMO_MEMBERS) -> int:
    """Run the demo; returns the exit code."""
    started = time.monotonic()
    print(f"starting host + {', '.join(members)}: etcd and one kube-apiserver per cluster ...")
    try:
        async with Environment(members=members, crd_paths=crd_paths()) as env:
            _say("control planes ready, Karmada CRDs installed on every cluster", started)
            rows = await _propagate(env, started)
    except TimeoutError as error:
        print(f"demo failed: {error}")
        return 1
    print()
    print(_table(rows))
    print()
    print("nginx is divided 2:1 across the members; the template's status aggregates theirs.")
    print(f"done in {time.monotonic() - started:.1f}s; control planes stopped cleanly")
    return 0
