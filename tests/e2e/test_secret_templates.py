"""End to end: a Secret selected by a PropagationPolicy is propagated like any other template.

Karmada propagates Secrets as ordinary resource templates. The controller-manager runs here as the
host's admin (the opt-in deploy/overlays/propagate-secrets grants the
same on Secrets), so the detector may watch Secrets in every namespace: a Secret and a ConfigMap
of the test's namespace, selected by one policy, reach both members with their data intact.
The cluster credentials' own watch (a metadata-only informer of the cluster namespace) must
not narrow what the detector sees of the Secret kind.
"""

from __future__ import annotations

import base64
import contextlib
from typing import Any

import pytest

from controllers.cluster.connection import SECRET
from reconcile import GVK, NotFound
from testenv import Environment, eventually
from tests.builders import configmap, propagation_policy
from tests.e2e.stack import MEMBERS, Stack, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

CONFIGMAP = GVK("", "v1", "ConfigMap")


def _secret(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "stringData": data,
    }


async def _copies(stack: Stack, gvk: GVK, name: str) -> dict[str, dict[str, Any]]:
    found = {}
    for member, client in stack.members.items():
        with contextlib.suppress(NotFound):
            found[member] = await client.get(gvk, name, namespace=stack.namespace)
    return found


async def test_a_secret_template_is_propagated_like_a_configmap(
    joined: Environment, namespace: str
) -> None:
    async with running(joined, namespace) as stack:
        await _secret_and_configmap_propagate(stack)


async def _secret_and_configmap_propagate(stack: Stack) -> None:
    ns = stack.namespace
    await stack.host.create(_secret("app-credentials", ns, password="s3cr3t", user="app"))
    await stack.host.create(configmap("app-settings", ns, mode="blue"))
    selectors = [
        {"apiVersion": "v1", "kind": "Secret", "name": "app-credentials"},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "app-settings"},
    ]
    placement = {"clusterAffinity": {"clusterNames": list(MEMBERS)}}
    await stack.host.create(propagation_policy("app", ns, selectors, placement))

    async def secrets_everywhere() -> dict[str, dict[str, Any]] | None:
        copies = await _copies(stack, SECRET, "app-credentials")
        return copies if set(copies) == set(MEMBERS) else None

    async def configmaps_everywhere() -> dict[str, dict[str, Any]] | None:
        copies = await _copies(stack, CONFIGMAP, "app-settings")
        return copies if set(copies) == set(MEMBERS) else None

    secrets = await eventually(secrets_everywhere, timeout=90, interval=0.2)
    configmaps = await eventually(configmaps_everywhere, timeout=90, interval=0.2)
    for member in MEMBERS:
        data = {k: base64.b64decode(v).decode() for k, v in secrets[member]["data"].items()}
        assert data == {"password": "s3cr3t", "user": "app"}, member
        assert secrets[member]["type"] == "Opaque"
        assert configmaps[member]["data"] == {"mode": "blue"}, member
