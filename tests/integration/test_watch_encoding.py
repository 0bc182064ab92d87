"""Watch streams come uncompressed from the real apiserver, WatchList streams included.

kube-apiserver 1.37 gzips a watch with sendInitialEvents (the WatchList the reflectors use by
default) for a client that accepts it, and keeps deflating and flushing every live event that
follows on the same stream; reconcile asks for identity encoding on watches (gzip was 10 % of a
no-op controller's busy CPU in bench/reconcile's py-spy profile, and the apiserver pays it too).
"""

from __future__ import annotations

import anyio
import pytest

from reconcile import GVK, Client
from reconcile.client.watch import WatchEvents

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")


@pytest.mark.parametrize("send_initial_events", [True, False], ids=["watch-list", "watch"])
async def test_a_watch_stream_is_not_compressed(
    client: Client, namespace: str, send_initial_events: bool
) -> None:
    listing = await client.list(CONFIGMAP, namespace=namespace)
    version = listing["metadata"]["resourceVersion"]
    with anyio.fail_after(30):
        async with client.watch(
            CONFIGMAP,
            namespace=namespace,
            resource_version=version,
            timeout_seconds=5,
            send_initial_events=send_initial_events,
        ) as events:
            assert isinstance(events, WatchEvents)
            meta = {"name": "plain", "namespace": namespace}
            await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
            async for event in events:
                if event["type"] == "ADDED":
                    assert event["object"]["metadata"]["name"] == "plain"
                    break
            assert events.content_encoding == ""
