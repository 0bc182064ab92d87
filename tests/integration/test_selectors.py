"""Label and field selectors select what the real kube-apiserver selects, in the fake and the cache.

The same ConfigMaps go to the real apiserver and to ``testenv.fake``; each selector's answer from
the apiserver is the reference the fake's list, a cache's list (both index-served where they can)
and ``reconcile.labels`` must equal.
"""

from __future__ import annotations

from urllib.parse import urlencode

import anyio
import pytest

from reconcile.cache.cache import Cache
from reconcile.gvk import GVK
from reconcile.labels import parse_selector
from reconcile.objects import Obj
from testenv import ControlPlane
from testenv.fake import FakeClient

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
LABELS: dict[str, dict[str, str]] = {
    "empty": {"tier": ""},
    "web": {"tier": "web", "app": "x"},
    "db": {"tier": "db", "app": "x"},
    "bare": {},
}
SELECTORS = [
    "tier in ()",
    "tier notin ()",
    "tier in (web,)",
    "tier in (,db)",
    "tier in (db,,web)",
    "tier=",
    "tier!=",
    "app=x,tier in (db)",
    "tier,!app",
]


def _configmap(name: str, namespace: str) -> Obj:
    meta = {"name": name, "namespace": namespace, "labels": LABELS[name]}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


async def test_selectors_with_empty_values_agree_with_the_apiserver(
    host: ControlPlane, namespace: str
) -> None:
    fake = FakeClient()
    for name in LABELS:
        await host.request(
            "POST", f"/api/v1/namespaces/{namespace}/configmaps", _configmap(name, namespace)
        )
        await fake.create(_configmap(name, namespace))
    cache = Cache(fake, sync_timeout=10)
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        for selector in SELECTORS:
            query = urlencode({"labelSelector": selector})
            real = await host.request("GET", f"/api/v1/namespaces/{namespace}/configmaps?{query}")
            expected = sorted(item["metadata"]["name"] for item in real["items"])
            for reader in (fake, cache):
                got = await reader.list(CONFIGMAP, namespace=namespace, label_selector=selector)
                assert sorted(i["metadata"]["name"] for i in got["items"]) == expected, selector
            parsed = parse_selector(selector)
            assert sorted(n for n, labels in LABELS.items() if parsed.matches(labels)) == expected
        group.cancel_scope.cancel()
