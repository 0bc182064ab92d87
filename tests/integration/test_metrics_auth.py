"""/metrics behind TokenReview + SubjectAccessReview against a real kube-apiserver, over HTTPS.

The host runs with RBAC and a service-account signing key: ServiceAccount tokens come from the
TokenRequest API, and a ``metrics-reader`` ClusterRole (nonResourceURLs ["/metrics"], verb get)
bound to one of them is what tells a scraper from anyone else. The manager runs as admin, which
covers its own need to create tokenreviews and subjectaccessreviews.
"""

from __future__ import annotations

import secrets
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from reconcile import GVK, Client, Manager
from testenv import ControlPlane, eventually, manager_for, running
from tests.builders import admin_client, service_account_token

pytestmark = pytest.mark.asyncio(loop_scope="session")

SERVICE_ACCOUNT = GVK("", "v1", "ServiceAccount")
CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
CLUSTER_ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")


async def _manager(host: ControlPlane, **options: Any) -> Manager:
    return await manager_for(host, health_probe_bind_address="0", **options)


@asynccontextmanager
async def _admin(host: ControlPlane) -> AsyncIterator[Client]:
    """A client of its own: a standby manager's clients refuse writes."""
    async with await admin_client(host, field_manager="metrics-test") as client:
        yield client


@asynccontextmanager
async def _metrics_reader(client: Client, namespace: str, account: str) -> AsyncIterator[None]:
    """A metrics-reader ClusterRole bound to ``account`` until the block ends."""
    name = f"metrics-reader-{namespace}"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
    await client.create(role)
    await client.create(binding)
    try:
        yield
    finally:
        await client.delete(CLUSTER_ROLE_BINDING, name)
        await client.delete(CLUSTER_ROLE, name)


async def _rbac_allows(client: Client, namespace: str, account: str) -> bool:
    # The authorizer's RBAC informer lags the write a little; a deny would be cached for 30 s.
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{namespace}:{account}",
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"],
            "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
        },
    }
    return bool((await client.create(review))["status"].get("allowed"))


async def _scrape(url: str, trust: bytes, token: str | None) -> tuple[int, str]:
    context = ssl.create_default_context(cadata=trust.decode())
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        aiohttp.ClientSession() as http,
        http.get(url, ssl=context, headers=headers) as response,
    ):
        return response.status, await response.text()


async def test_metrics_answer_401_403_and_200_by_token_and_rbac_over_https(
    host: ControlPlane, namespace: str
) -> None:
    manager = await _manager(host, metrics_bind_address="127.0.0.1:0", metrics_secure=True)
    async with (
        _admin(host) as client,
        running(manager),
        _metrics_reader(client, namespace, "scraper"),
    ):
        await eventually(lambda: _rbac_allows(client, namespace, "scraper"), timeout=20)
        scraper = await service_account_token(client, namespace, "scraper")
        nobody = await service_account_token(client, namespace, "nobody")
        assert manager.metrics_certificate is not None
        trust = manager.metrics_certificate.cert_pem
        url = f"https://127.0.0.1:{manager.metrics_port}/metrics"

        assert (await _scrape(url, trust, None))[0] == 401
        assert (await _scrape(url, trust, "not-a-token." + secrets.token_hex(8)))[0] == 401
        status, text = await _scrape(url, trust, nobody)
        assert (status, text.strip()) == (
            403,
            f"Authorization denied for user system:serviceaccount:{namespace}:nobody",
        )
        status, text = await _scrape(url, trust, scraper)
        assert status == 200
        assert "leader_election_master_status" in text
        # Plain HTTP on the HTTPS port gets nothing.
        with pytest.raises(aiohttp.ClientError):
            async with (
                aiohttp.ClientSession() as http,
                http.get(url.replace("https", "http")) as response,
            ):
                await response.read()


async def test_a_standby_serves_its_metrics_to_an_authorized_scraper(
    host: ControlPlane, namespace: str
) -> None:
    manager = await _manager(
        host,
        metrics_bind_address="127.0.0.1:0",
        metrics_secure=True,
        leader_election=True,
        leader_election_id="held-by-another",
        leader_election_namespace=namespace,
    )
    spec = {"holderIdentity": "another-process", "leaseDurationSeconds": 3600}
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": spec}
    lease["metadata"] = {"name": "held-by-another", "namespace": namespace}
    async with _admin(host) as client:
        await client.create(lease)
    async with (
        _admin(host) as client,
        running(manager),
        _metrics_reader(client, namespace, "scraper"),
    ):
        await eventually(lambda: _rbac_allows(client, namespace, "scraper"), timeout=20)
        token = await service_account_token(client, namespace, "scraper")
        assert manager.metrics_certificate is not None
        url = f"https://127.0.0.1:{manager.metrics_port}/metrics"
        status, text = await _scrape(url, manager.metrics_certificate.cert_pem, token)
        assert status == 200
        assert "leader_election_master_status" in text
        assert not manager.elected.is_set()
