"""A WebhookBackend keeps a TLS context only per trust root its current webhooks use (issue #26)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from controllers.interpreter.webhook import WebhookBackend
from testenv.certs import CertificateAuthority

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _configuration(name: str, ca_pem: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "workloads.example.com",
                "clientConfig": {
                    "url": "https://127.0.0.1:1/interpret",
                    "caBundle": base64.b64encode(ca_pem).decode(),
                },
                "rules": [
                    {
                        "operations": ["InterpretReplica"],
                        "apiGroups": ["workload.example.io"],
                        "apiVersions": ["v1alpha1"],
                        "kinds": ["Workload"],
                    }
                ],
                "interpreterContextVersions": ["v1alpha1"],
            }
        ],
    }


async def test_tls_contexts_of_replaced_webhooks_are_dropped() -> None:
    backend = WebhookBackend()
    for index in range(5):  # each change of the configuration brings a new caBundle
        pem = CertificateAuthority(f"ca-{index}").cert_pem
        backend.load([_configuration("test", pem)])
        [hook] = backend.webhooks
        backend._ssl_for(hook)  # what a call does before it connects
    assert len(backend._contexts) == 1
    backend.load([])  # the configuration was deleted
    assert backend._contexts == {}
    backend.load([_configuration("test", pem)])
    backend._ssl_for(backend.webhooks[0])
    await backend.aclose()
    assert backend._contexts == {}
