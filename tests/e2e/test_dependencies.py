"""End to end: what a Deployment needs follows it to its members (the dependencies distributor)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.dependencies import depended_by_label
from reconcile import GVK, NotFound
from testenv import Environment, eventually
from tests.builders import configmap, deployment, deployment_selector, propagation_policy
from tests.e2e.stack import DEPLOYMENT, POLICY, Stack, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

BINDING = GVK("work.karmada.io", "v1alpha2", "ResourceBinding")
DEPENDENCIES = {
    GVK("", "v1", "ConfigMap"): "web-config",
    GVK("", "v1", "Secret"): "web-secret",
    GVK("", "v1", "ServiceAccount"): "web-sa",
    GVK("", "v1", "PersistentVolumeClaim"): "web-data",
}


def _web(namespace: str) -> dict[str, Any]:
    web = deployment("web", namespace, 1)
    pod = web["spec"]["template"]["spec"]
    pod["serviceAccountName"] = "web-sa"
    pod["volumes"] = [
        {"name": "config", "configMap": {"name": "web-config"}},
        {"name": "secret", "secret": {"secretName": "web-secret"}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "web-data"}},
    ]
    return web


def _dependencies(namespace: str) -> list[dict[str, Any]]:
    return [
        configmap("web-config", namespace, mode="blue"),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "web-secret", "namespace": namespace},
            "stringData": {"token": "s3cr3t"},
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "web-sa"}},
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "web-data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    ]


async def _placed(stack: Stack, gvk: GVK, name: str) -> set[str]:
    found = set()
    for cluster, member in stack.members.items():
        try:
            obj = await member.get(gvk, name, namespace=stack.namespace)
        except NotFound:
            continue
        # A deleted PVC stays Terminating: testenv runs no controller to drop pvc-protection.
        if not obj["metadata"].get("deletionTimestamp"):
            found.add(cluster)
    return found


async def _wait_placed(stack: Stack, expected: dict[GVK, set[str]]) -> None:
    async def matches() -> dict[str, set[str]] | None:
        placed = {g.kind: await _placed(stack, g, DEPENDENCIES[g]) for g in expected}
        return None if placed != {g.kind: c for g, c in expected.items()} else placed

    await eventually(matches, timeout=60, interval=0.2)


async def test_dependencies_follow_their_deployment(joined: Environment, namespace: str) -> None:
    async with running(joined, namespace) as stack:
        await _dependencies_follow_their_deployment(stack)


async def _dependencies_follow_their_deployment(stack: Stack) -> None:
    ns = stack.namespace
    # The Secret is created last, after the binding exists: it is picked up when it appears.
    objects = _dependencies(ns)
    for obj in objects:
        obj["metadata"]["namespace"] = ns
    secret = next(o for o in objects if o["kind"] == "Secret")
    for obj in objects:
        if obj is not secret:
            await stack.host.create(obj)
    await stack.host.create(_web(ns))
    policy = propagation_policy(
        "web", ns, deployment_selector("web"), {"clusterAffinity": {"clusterNames": ["member1"]}}
    )
    policy["spec"]["propagateDeps"] = True
    await stack.host.create(policy)
    await eventually(lambda: _placed(stack, DEPLOYMENT, "web"), timeout=60)
    await stack.host.create(secret)
    await _wait_placed(stack, {g: {"member1"} for g in DEPENDENCIES})

    attached = await stack.host.get(BINDING, "web-config-configmap", namespace=ns)
    (required,) = attached["spec"]["requiredBy"]
    assert (required["namespace"], required["name"]) == (ns, "web-deployment")
    assert [c["name"] for c in required["clusters"]] == ["member1"]
    assert depended_by_label(ns, "web-deployment") in attached["metadata"]["labels"]

    # A placement change moves the dependencies with the Deployment.
    policy = await stack.host.get(POLICY, "web", namespace=ns)
    policy["spec"]["placement"] = {"clusterAffinity": {"clusterNames": ["member2"]}}
    await stack.host.update(policy)
    await _wait_placed(stack, {g: {"member2"} for g in DEPENDENCIES})

    # A reference removed from the Deployment releases its binding: the member copy goes.
    web = await stack.host.get(DEPLOYMENT, "web", namespace=ns)
    volumes = web["spec"]["template"]["spec"]["volumes"]
    web["spec"]["template"]["spec"]["volumes"] = [v for v in volumes if "configMap" not in v]
    await stack.host.update(web)
    still = {g: {"member2"} for g in DEPENDENCIES if g.kind != "ConfigMap"}
    await _wait_placed(stack, {GVK("", "v1", "ConfigMap"): set(), **still})

    async def released() -> bool:
        try:
            await stack.host.get(BINDING, "web-config-configmap", namespace=ns)
        except NotFound:
            return True
        return False

    await eventually(released, timeout=30)
