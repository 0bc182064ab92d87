"""End to end: a template and a policy on the host become Deployments in two real members."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
import pytest_asyncio

from controllers.api import crd_paths
from controllers.controllermanager import build
from controllers.join import join_cluster
from reconcile import GVK, Client, ClusterConfig, Manager, ManagerOptions, NotFound
from testenv import ControlPlane, Environment, eventually

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

DEPLOYMENT = GVK("apps", "v1", "Deployment")
POLICY = GVK("policy.karmada.io", "v1alpha1", "PropagationPolicy")
OVERRIDE = GVK("policy.karmada.io", "v1alpha1", "OverridePolicy")


async def _client(plane: ControlPlane) -> Client:
    config = await ClusterConfig.from_kubeconfig(
        plane.kubeconfig, temp_dir=plane.directory / "client"
    )
    return Client(config)


class Stack:
    """The host and member clients of a running controller-manager."""

    def __init__(self, host: Client, members: dict[str, Client], namespace: str) -> None:
        self.host, self.members, self.namespace = host, members, namespace

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


@pytest_asyncio.fixture(loop_scope="session")
async def joined(multicluster: Environment) -> Environment:
    """The members joined to the host (a ServiceAccount token each), CRDs installed."""
    env = multicluster
    await env.host.install_crds(crd_paths())
    async with await _client(env.host) as host:
        for name in ("member1", "member2"):
            kubeconfig = str(env.members[name].kubeconfig)
            await join_cluster(name, host=host, member_kubeconfig=kubeconfig)
    return env


@asynccontextmanager
async def _running(env: Environment, namespace: str) -> AsyncIterator[Stack]:
    """The whole controller-manager on the host, and clients of every cluster."""
    host = await _client(env.host)
    members = {name: await _client(env.members[name]) for name in ("member1", "member2")}
    for name, member in members.items():
        if not await _has_namespace(member, namespace):
            await env.members[name].create_namespace(namespace)
    config = await ClusterConfig.from_kubeconfig(
        env.host.kubeconfig, temp_dir=env.host.directory / "client"
    )
    manager = Manager(config, options=ManagerOptions(metrics_bind_address="0"))
    build(manager, scratch=env.host.directory / "client")
    try:
        async with anyio.create_task_group() as group:
            await group.start(manager.start)
            yield Stack(host, members, namespace)
            manager.stop()
    finally:
        for client in (host, *members.values()):
            await client.close()


async def _has_namespace(client: Client, name: str) -> bool:
    try:
        await client.get(GVK("", "v1", "Namespace"), name)
    except NotFound:
        return False
    return True


def _deployment(name: str, namespace: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]},
            },
        },
    }


def _policy(name: str, namespace: str, target: str, **placement: Any) -> dict[str, Any]:
    default = {
        "clusterAffinity": {"clusterNames": ["member1", "member2"]},
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
    }
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": target}],
            "placement": {**default, **placement},
        },
    }


async def test_weighted_scaled_duplicated_and_excluded(joined: Environment, namespace: str) -> None:
    async with _running(joined, namespace) as stack:
        await _weighted_scaled_duplicated_and_excluded(stack)


async def _weighted_scaled_duplicated_and_excluded(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(_deployment("nginx", ns, 3))
    await stack.host.create(_policy("nginx", ns, "nginx"))
    await stack.wait_replicas("nginx", {"member1": 2, "member2": 1})

    await stack.host.patch(DEPLOYMENT, "nginx", {"spec": {"replicas": 9}}, namespace=ns)
    await stack.wait_replicas("nginx", {"member1": 6, "member2": 3})

    duplicated = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    policy = await stack.host.get(POLICY, "nginx", namespace=ns)
    policy["spec"]["placement"] = {**policy["spec"]["placement"], **duplicated}
    await stack.host.update(policy)
    await stack.host.patch(DEPLOYMENT, "nginx", {"spec": {"replicas": 3}}, namespace=ns)
    await stack.wait_replicas("nginx", {"member1": 3, "member2": 3})

    policy = await stack.host.get(POLICY, "nginx", namespace=ns)
    policy["spec"]["placement"]["clusterAffinity"] = {
        "clusterNames": ["member1", "member2"],
        "exclude": ["member2"],
    }
    await stack.host.update(policy)
    await stack.wait_replicas("nginx", {"member1": 3, "member2": None})


async def test_overrides_show_only_on_their_member(joined: Environment, namespace: str) -> None:
    async with _running(joined, namespace) as stack:
        await _overrides_show_only_on_their_member(stack)


async def _overrides_show_only_on_their_member(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "OverridePolicy",
            "metadata": {"name": "web-overrides", "namespace": ns},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
                ],
                "overrideRules": [
                    {
                        "targetCluster": {"clusterNames": ["member2"]},
                        "overriders": {
                            "labelsOverrider": [{"operator": "add", "value": {"tier": "edge"}}]
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
    )
    await stack.host.create(_deployment("web", ns, 3))
    await stack.host.create(_policy("web", ns, "web"))
    await stack.wait_replicas("web", {"member1": 2, "member2": 1})

    async def overridden() -> bool:
        one = await stack.member_deployment("member1", "web")
        two = await stack.member_deployment("member2", "web")
        if one is None or two is None:
            return False
        image = one["spec"]["template"]["spec"]["containers"][0]["image"]
        labelled = two["metadata"]["labels"].get("tier") == "edge"
        return bool(image == "registry.example.com/nginx:1.25" and labelled)

    await eventually(overridden, timeout=60)
    one = await stack.member_deployment("member1", "web")
    two = await stack.member_deployment("member2", "web")
    assert one is not None
    assert two is not None
    assert "tier" not in one["metadata"]["labels"]
    assert two["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    template = await stack.host.get(DEPLOYMENT, "web", namespace=ns)
    assert "tier" not in template["metadata"]["labels"], "the template itself is untouched"


async def test_members_are_repaired_and_status_comes_back(
    joined: Environment, namespace: str
) -> None:
    async with _running(joined, namespace) as stack:
        await _members_are_repaired_and_status_comes_back(stack)


async def _members_are_repaired_and_status_comes_back(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(_deployment("api", ns, 3))
    await stack.host.create(_policy("api", ns, "api"))
    await stack.wait_replicas("api", {"member1": 2, "member2": 1})

    member1 = stack.members["member1"]
    await member1.delete(DEPLOYMENT, "api", namespace=ns)
    await stack.wait_replicas("api", {"member1": 2, "member2": 1})

    drifted = await member1.get(DEPLOYMENT, "api", namespace=ns)
    edited = copy.deepcopy(drifted)
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:evil"
    await member1.update(edited)

    async def reverted() -> bool:
        current = await stack.member_deployment("member1", "api")
        if current is None:
            return False
        return bool(current["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25")

    await eventually(reverted, timeout=60)

    # testenv runs no kube-controller-manager: play it, report every replica ready.
    for client in stack.members.values():
        deployment = await client.get(DEPLOYMENT, "api", namespace=ns)
        replicas = deployment["spec"]["replicas"]
        deployment["status"] = {
            "observedGeneration": deployment["metadata"]["generation"],
            "replicas": replicas,
            "readyReplicas": replicas,
            "updatedReplicas": replicas,
            "availableReplicas": replicas,
        }
        await client.update_status(deployment)

    async def aggregated() -> bool:
        template = await stack.host.get(DEPLOYMENT, "api", namespace=ns)
        return (template.get("status") or {}).get("readyReplicas") == 3

    await eventually(aggregated, timeout=60)
