"""A controller of the newcomer's kind on testenv: an async map function on the cached client,
and Events from the manager's recorder.

ConfigMaps name a Secret (``data.secret``); a Secret's change reconciles every ConfigMap that
names it, found by the map function with a list of the manager's cached client that its field
index answers (the same read a reconcile makes). Each reconcile records a Normal Event on its
ConfigMap through ``manager.event_recorder``, which the apiserver then holds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from reconcile import (
    GVK,
    EnqueueRequestsFromAsyncMapFunc,
    Request,
    Result,
    controller_managed_by,
)
from reconcile.objects import Obj
from testenv import ControlPlane, eventually, manager_for, running

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
EVENT = GVK("", "v1", "Event")
INDEX = "field:data.secret"


def _by_secret(obj: Obj) -> list[str]:
    secret = (obj.get("data") or {}).get("secret")
    return [secret] if secret else []


def _cm(name: str, namespace: str, secret: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"secret": secret}}


async def test_a_secret_change_reconciles_the_configmaps_an_async_map_finds_in_the_cache(
    host: ControlPlane, namespace: str
) -> None:
    manager = await manager_for(host)
    manager.cache.index_field(CONFIGMAP, INDEX, _by_secret)
    recorder = manager.event_recorder("copier")
    seen: Counter[str] = Counter()

    async def referrers(secret: Obj) -> list[Request]:
        # controller-runtime's idiom: a field selector the cache answers from its index.
        meta = secret["metadata"]
        found = await manager.client.list(
            CONFIGMAP, namespace=meta["namespace"], field_selector=f"data.secret={meta['name']}"
        )
        return [Request(o["metadata"]["name"], o["metadata"]["namespace"]) for o in found["items"]]

    async def reconcile(request: Request) -> Result | None:
        if request.namespace != namespace:
            return None
        seen[request.name] += 1
        obj = await manager.client.get(CONFIGMAP, request.name, namespace=namespace)
        recorder.event(obj, "Normal", "Copied", f"copy {seen[request.name]}")
        return None

    (
        controller_managed_by(manager)
        .for_(CONFIGMAP)
        .watches(SECRET, EnqueueRequestsFromAsyncMapFunc(referrers))
        .named("copier")
        .complete(reconcile)
    )
    client = manager.api_reader
    async with running(manager):
        for name, referred in [("a", "s1"), ("b", "s1"), ("c", "s2")]:
            await client.create(_cm(name, namespace, referred))

        async def each_once() -> bool:
            return all(seen[n] >= 1 for n in "abc")

        await eventually(each_once, timeout=20)
        before = dict(seen)
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s1", "namespace": namespace},
        }
        await client.create(secret)

        async def referrers_again() -> bool:
            return seen["a"] > before["a"] and seen["b"] > before["b"]

        await eventually(referrers_again, timeout=20)

        async def events_of_a() -> list[Obj]:
            found = await client.list(
                EVENT, namespace=namespace, field_selector="involvedObject.name=a"
            )
            return [e for e in found["items"] if e["reason"] == "Copied"]

        events = await eventually(events_of_a, timeout=20)
        assert events[0]["source"]["component"] == "copier"
        assert events[0]["type"] == "Normal"
    assert seen["c"] == before["c"]  # s2 did not change: c was not mapped
