"""Karmada's admission against a real kube-apiserver: deploy/webhook's configurations installed by
testenv, served by the controller-manager's ``webhook`` controller and by ``reconcile webhook``.

A PropagationPolicy with an invalid label selector is refused at create with the reason; a valid
one comes back with its permanent id, the finalizer and ``schedulerName`` defaulted. A Cluster
naming another Cluster's Secret is refused, at create and at update (#26 item 6).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from controllers.api import (
    CLUSTER_GVK,
    KARMADA_CLUSTER_NAMESPACE,
    OVERRIDE_POLICY_GVK,
    PROPAGATION_POLICY_GVK,
)
from controllers.cluster.binding import owner_reference
from controllers.controllermanager import build
from reconcile import GVK, AlreadyExists, ApiError, Client, Manager, NotFound
from reconcile.webhook import WebhookServer
from testenv import (
    ControlPlane,
    WebhookInstaller,
    WebhookInstallOptions,
    WebhookServing,
    manager_for,
    running,
)
from testenv.ports import free_port
from tests.builders import deployment_selector, propagation_policy

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGURATIONS = Path(__file__).parents[2] / "deploy" / "webhook" / "webhook-configuration.yaml"
PERMANENT_ID = "propagationpolicy.karmada.io/permanent-id"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
READY_WITHIN = 60.0


async def _install(webhooks: WebhookInstaller) -> WebhookServing:
    return await webhooks.install(WebhookInstallOptions(paths=[CONFIGURATIONS]))


async def _webhook_manager(host: ControlPlane, webhooks: WebhookInstaller) -> Manager:
    """A manager running only the webhook controller, behind deploy/webhook's configurations."""
    serving = await _install(webhooks)
    server = WebhookServer(host=serving.host, port=serving.port, cert_dir=serving.cert_dir)
    manager = await manager_for(host, webhook_server=server)
    build(manager, controllers=["webhook"])
    return manager


async def _refused_and_defaulted(client: Client, namespace: str) -> None:
    invalid = propagation_policy(
        "invalid", namespace, [{"apiVersion": "apps/v1", "kind": "Deployment"}], {}
    )
    invalid["spec"]["resourceSelectors"][0]["labelSelector"] = {
        "matchExpressions": [{"key": "app", "operator": "In"}]
    }
    with pytest.raises(ApiError) as refused:
        await client.create(invalid)
    message = str(refused.value)
    assert "denied the request" in message
    assert (
        "spec.resourceSelectors[0].labelSelector.matchExpressions[0].values: Required value: "
        "must be specified when `operator` is 'In' or 'NotIn'"
    ) in message

    valid = propagation_policy("valid", namespace, deployment_selector("web"), {})
    valid["metadata"]["labels"] = {PERMANENT_ID: "copied-from-another-policy"}
    created = await client.create(valid)
    assert UUID.fullmatch(created["metadata"]["labels"][PERMANENT_ID])
    assert created["metadata"]["finalizers"] == ["karmada.io/propagation-policy-controller"]
    assert created["spec"]["schedulerName"] == "default-scheduler"
    assert created["spec"]["resourceSelectors"][0]["namespace"] == namespace
    # The id is the policy's for good: an update may not change it.
    forged = {**created, "metadata": {**created["metadata"], "labels": {PERMANENT_ID: "forged"}}}
    with pytest.raises(ApiError, match="is immutable"):
        await client.update(forged)
    # Finalizer off, so the namespace's deletion does not wait for a detector.
    created = await client.get(PROPAGATION_POLICY_GVK, "valid", namespace=namespace)
    created["metadata"]["finalizers"] = []
    await client.update(created)


async def test_the_controller_managers_webhook_controller_admits_policies(
    host: ControlPlane,
    webhooks: WebhookInstaller,
    karmada_client: Client,
    namespace: str,
) -> None:
    manager = await _webhook_manager(host, webhooks)
    async with running(manager):
        await _refused_and_defaulted(karmada_client, namespace)


async def _ready(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        with anyio.fail_after(READY_WITHIN):
            while True:
                try:
                    async with session.get(url) as answer:
                        if answer.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await anyio.sleep(0.2)


@asynccontextmanager
async def _webhook_process(host: ControlPlane, serving: WebhookServing) -> AsyncIterator[None]:
    probes = free_port()
    command = [
        sys.executable,
        "-m",
        "controllers.cli",
        "webhook",
        f"--kubeconfig={host.kubeconfig}",
        f"--bind-address={serving.host}",
        f"--secure-port={serving.port}",
        f"--cert-dir={serving.cert_dir}",
        "--metrics-bind-address=0",
        f"--health-probe-bind-address=127.0.0.1:{probes}",
    ]
    log = serving.cert_dir / "webhook.log"
    with log.open("wb") as output:
        process = await anyio.open_process(command, stdout=output, stderr=output)
        try:
            await _ready(f"http://127.0.0.1:{probes}/readyz")
            yield
        except BaseException:
            print(log.read_text()[-4000:])
            raise
        finally:
            process.terminate()
            with anyio.fail_after(30):
                await process.wait()


async def test_reconcile_webhook_admits_policies(
    host: ControlPlane,
    webhooks: WebhookInstaller,
    karmada_client: Client,
    namespace: str,
) -> None:
    serving = await _install(webhooks)
    async with _webhook_process(host, serving):
        await _refused_and_defaulted(karmada_client, namespace)


async def test_a_state_preservation_json_path_that_is_too_long_or_does_not_parse_is_refused(
    host: ControlPlane,
    webhooks: WebhookInstaller,
    karmada_client: Client,
    namespace: str,
) -> None:
    # #26 item 2: the controller runs the template on its event loop at each failover.
    manager = await _webhook_manager(host, webhooks)

    def failing_over(name: str, json_path: str) -> dict[str, object]:
        rule = {"aliasLabelName": "job-id", "jsonPath": json_path}
        application = {
            "decisionConditions": {"tolerationSeconds": 10},
            "purgeMode": "Immediately",
            "statePreservation": {"rules": [rule]},
        }
        selectors = deployment_selector("web")
        failover = {"application": application}
        return propagation_policy(
            name, namespace, selectors, {}, propagateDeps=True, failover=failover
        )

    field = "spec.failover.application.statePreservation.rules[0].jsonPath"
    async with running(manager):
        hostile = "{[?(@" + " " * 500 + "==" + " " * 500 + "x]}"
        with pytest.raises(ApiError, match="is not a valid JSONPath template") as refused:
            await karmada_client.create(failing_over("hostile", hostile))
        assert field in str(refused.value)
        with pytest.raises(ApiError, match="Too long") as refused:
            await karmada_client.create(failing_over("long", "{.a}" + "x" * 1024))
        assert field in str(refused.value)


async def test_an_override_policy_that_rewrites_identity_is_refused(
    host: ControlPlane,
    webhooks: WebhookInstaller,
    karmada_client: Client,
    namespace: str,
) -> None:
    # #26 item 1: these two plaintext operations turned a tenant's ConfigMap into a
    # ClusterRoleBinding to cluster-admin on every member.
    manager = await _webhook_manager(host, webhooks)
    plaintext = [
        {"path": "/kind", "operator": "replace", "value": "ClusterRoleBinding"},
        {"path": "/metadata/namespace", "operator": "remove"},
        {"path": "/metadata/labels/tier", "operator": "add", "value": "web"},
    ]

    def policy(operations: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "apiVersion": OVERRIDE_POLICY_GVK.api_version,
            "kind": "OverridePolicy",
            "metadata": {"name": "escalate", "namespace": namespace},
            "spec": {
                "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}],
                "overrideRules": [{"overriders": {"plaintext": operations}}],
            },
        }

    async with running(manager):
        with pytest.raises(ApiError, match="denied the request") as refused:
            await karmada_client.create(policy(plaintext))
        message = str(refused.value)
        for index, path in enumerate(["/kind", "/metadata/namespace"]):
            assert f'plaintext[{index}].path: Invalid value: "{path}"' in message, message
        assert "must not reach the object's apiVersion, kind, namespace or name" in message
        assert "plaintext[2]" not in message
        await karmada_client.create(policy(plaintext[2:]))


def _cluster(name: str, secret: str) -> dict[str, object]:
    reference = {"namespace": KARMADA_CLUSTER_NAMESPACE, "name": secret}
    spec = {
        "apiEndpoint": f"https://{name}.example:6443",
        "syncMode": "Push",
        "secretRef": reference,
    }
    return {"apiVersion": CLUSTER_GVK.api_version, "kind": "Cluster",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


async def test_a_cluster_naming_another_clusters_secret_is_refused(
    host: ControlPlane, webhooks: WebhookInstaller, karmada_client: Client
) -> None:
    suffix = secrets.token_hex(3)
    victim, thief, rejoined = f"victim-{suffix}", f"thief-{suffix}", f"rejoined-{suffix}"
    manager = await _webhook_manager(host, webhooks)
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": KARMADA_CLUSTER_NAMESPACE}}  # fmt: skip
    with contextlib.suppress(AlreadyExists):
        await karmada_client.create(namespace)
    secret_gvk = GVK("", "v1", "Secret")
    try:
        async with running(manager):
            # As join does it: the Cluster first (its Secret not there yet), then the Secret
            # bound to it.
            created = await karmada_client.create(_cluster(victim, victim))
            owner = owner_reference(victim, created["metadata"]["uid"])
            await karmada_client.create(_bound_secret(victim, owner))

            with pytest.raises(ApiError, match="denied the request") as refused:
                await karmada_client.create(_cluster(thief, victim))
            assert (
                f"SecretNotBound: Secret karmada-cluster/{victim} (spec.secretRef) is bound to "
                f"Cluster '{victim}', not to Cluster {thief}"
            ) in str(refused.value)
            own = await karmada_client.create(_cluster(thief, thief))
            own["spec"]["secretRef"]["name"] = victim
            with pytest.raises(ApiError, match=f"is bound to Cluster '{victim}'"):
                await karmada_client.update(own)

            # A Secret left bound to an earlier Cluster of the name: admitted, for join to bind
            # it again (the controller-manager does not use it until then).
            stale = owner_reference(rejoined, "uid-of-an-earlier-cluster")
            await karmada_client.create(_bound_secret(rejoined, stale))
            await karmada_client.create(_cluster(rejoined, rejoined))
    finally:
        for name in (victim, thief, rejoined):
            with contextlib.suppress(NotFound):
                await karmada_client.delete(CLUSTER_GVK, name)
            with contextlib.suppress(NotFound):
                await karmada_client.delete(secret_gvk, name, namespace=KARMADA_CLUSTER_NAMESPACE)


def _bound_secret(name: str, owner: dict[str, object]) -> dict[str, object]:
    metadata = {"name": name, "namespace": KARMADA_CLUSTER_NAMESPACE, "ownerReferences": [owner]}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": {"token": "dA=="}}
