"""End to end: dependencies under least privilege, where the role does not grant Secrets.

The controller-manager runs as deploy/'s ServiceAccount (as in tests/e2e/test_rbac.py). A Deployment
with ``propagateDeps`` names a ConfigMap and a Secret: the ConfigMap follows it to its member, the
Secret is never requested (the test fails on any 403 the controllers log) and a Warning Event
on the binding names the kind and the permission missing. Once the opt-in role
deploy/overlays/propagate-secrets/propagate-secrets.yaml is aggregated, the detector's next
discovery round permits Secrets and the Secret follows too. The role is taken away again at the
end, so later tests run under deploy/'s role as shipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import pytest

from controllers.cluster.connection import SECRET
from controllers.dependencies.withheld import DEPENDENCY_FORBIDDEN_REASON
from reconcile import EVENT_GVK, GVK, Client, ClusterConfig, ManagerOptions, NotFound
from testenv import Environment, eventually
from tests.builders import configmap, deployment, deployment_selector, propagation_policy
from tests.e2e.stack import DEPLOYMENT, Stack, client_of, running
from tests.e2e.test_rbac import (
    CLUSTER_ROLE,
    DEPLOY,
    _aggregate_cluster_roles,
    _apply_deploy,
    _no_refusals,
    _service_account_config,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

CONFIGMAP = GVK("", "v1", "ConfigMap")
BINDING = GVK("work.karmada.io", "v1alpha2", "ResourceBinding")
SECRETS_ROLE = "reconcile:controller-manager:propagate-secrets"
PROPAGATE_SECRETS = DEPLOY.parent / "overlays" / "propagate-secrets" / "propagate-secrets.yaml"
DISCOVERY_ROUND = 30.0
"""The detector's discovery period (Karmada's 30 s): a granted kind is seen within one round."""


async def test_a_secret_dependency_waits_for_its_permission(
    joined: Environment, namespace: str
) -> None:
    async with _as_service_account(joined) as config, _secrets_revoked_after(joined):
        options = ManagerOptions(metrics_bind_address="0")
        with _no_refusals():
            async with running(joined, namespace, config=config, options=options) as stack:
                await _configmap_follows_secret_is_withheld(stack)
                await _secret_follows_once_permitted(joined, stack)


@asynccontextmanager
async def _as_service_account(env: Environment) -> AsyncIterator[ClusterConfig]:
    await _apply_deploy(env)
    async with await client_of(env.host) as admin:
        await _aggregate_cluster_roles(admin)
        config = await _service_account_config(env, admin)
    yield config


@asynccontextmanager
async def _secrets_revoked_after(env: Environment) -> AsyncIterator[None]:
    try:
        yield
    finally:
        async with await client_of(env.host) as admin:
            with suppress(NotFound):
                await admin.delete(CLUSTER_ROLE, SECRETS_ROLE)
            await _aggregate_cluster_roles(admin)


def _web(namespace: str) -> dict[str, Any]:
    web = deployment("web", namespace, 1)
    web["spec"]["template"]["spec"]["volumes"] = [
        {"name": "config", "configMap": {"name": "web-config"}},
        {"name": "secret", "secret": {"secretName": "web-secret"}},
    ]
    return web


def _secret(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "web-secret", "namespace": namespace},
        "stringData": {"token": "s3cr3t"},
    }


async def _on_member1(stack: Stack, gvk: GVK, name: str) -> bool:
    try:
        await stack.members["member1"].get(gvk, name, namespace=stack.namespace)
    except NotFound:
        return False
    return True


async def _configmap_follows_secret_is_withheld(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(configmap("web-config", ns, mode="blue"))
    await stack.host.create(_secret(ns))
    await stack.host.create(_web(ns))
    placement = {"clusterAffinity": {"clusterNames": ["member1"]}}
    policy = propagation_policy("web", ns, deployment_selector("web"), placement)
    policy["spec"]["propagateDeps"] = True
    await stack.host.create(policy)

    await eventually(lambda: _on_member1(stack, DEPLOYMENT, "web"), timeout=60, interval=0.2)
    await eventually(lambda: _on_member1(stack, CONFIGMAP, "web-config"), timeout=60, interval=0.2)
    event = await eventually(lambda: _forbidden_event(stack.host, ns), timeout=60, interval=0.2)
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "ResourceBinding"
    assert f"Secret {ns}/web-secret (v1) is not propagated" in event["message"]
    assert "get secrets" in event["message"]

    assert not await _on_member1(stack, SECRET, "web-secret")
    with pytest.raises(NotFound):
        await stack.host.get(BINDING, "web-secret-secret", namespace=ns)


async def _forbidden_event(admin: Client, namespace: str) -> dict[str, Any] | None:
    listed = await admin.list(
        EVENT_GVK, namespace=namespace, field_selector="involvedObject.name=web-deployment"
    )
    found = [e for e in listed["items"] if e.get("reason") == DEPENDENCY_FORBIDDEN_REASON]
    return found[0] if found else None


async def _secret_follows_once_permitted(env: Environment, stack: Stack) -> None:
    await env.host.kubectl("apply", "--server-side", f"--filename={PROPAGATE_SECRETS}")
    async with await client_of(env.host) as admin:
        await _aggregate_cluster_roles(admin)
    # One discovery round to see the grant, another of slack for the loaded machine.
    secret_placed = lambda: _on_member1(stack, SECRET, "web-secret")  # noqa: E731
    await eventually(secret_placed, timeout=3 * DISCOVERY_ROUND, interval=0.5)
    attached = await stack.host.get(BINDING, "web-secret-secret", namespace=stack.namespace)
    (required,) = attached["spec"]["requiredBy"]
    assert required["name"] == "web-deployment"
