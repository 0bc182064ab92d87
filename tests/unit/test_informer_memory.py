"""Memory of an informer's sync: a watch-list never holds every decoded object at once, and a
list's memory is returned once its objects are stored."""

from __future__ import annotations

import json
import subprocess
import sys

# Streams OBJECTS ConfigMaps of about 2.8 KB as a watch-list, each event decoded from its JSON
# line only when the reflector asks for it (as the client's watch stream does), into an informer.
PROBE = """
import gc, json, tracemalloc
from contextlib import asynccontextmanager
import anyio, orjson
from reconcile.cache.informer import SharedInformer

OBJECTS = 4000

def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

def line(i):
    meta = {"name": f"cm-{i:05d}", "namespace": "bench", "resourceVersion": str(i + 1),
            "labels": {"app": "bench", "shard": str(i % 16)},
            "managedFields": [{"manager": "bench", "fieldsV1": {"f:data": {"f:k": {}}}}]}
    data = {f"key-{k}": (f"cm-{i:05d}-{k}-" * 64)[:512] for k in range(4)}
    return orjson.dumps({"type": "ADDED", "object": {"kind": "ConfigMap", "metadata": meta,
                                                     "data": data}})

END = orjson.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "999999",
    "annotations": {"k8s.io/initial-events-end": "true"}}}})

class Lines:
    async def list(self, **kwargs):
        raise AssertionError("a watch-list syncs without a list")

    def watch(self, **kwargs):
        @asynccontextmanager
        async def stream():
            async def events():
                if not kwargs.get("send_initial_events"):
                    await anyio.sleep_forever()
                for i in range(OBJECTS):
                    yield orjson.loads(line(i))
                yield orjson.loads(END)
                await anyio.sleep_forever()
            yield events()
        return stream()

async def main():
    informer = SharedInformer(Lines(), name="cms")
    gc.collect()
    rss = rss_kib()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        await informer.wait_for_sync()
        group.cancel_scope.cancel()
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    stored = sum(len(v) for v in informer.indexer._items.values())
    print(json.dumps({"objects": len(informer.indexer), "stored": stored,
                      "live": current - before, "peak": peak - before,
                      "rss": (rss_kib() - rss) * 1024}))

anyio.run(main)
"""


def test_a_watch_list_sync_never_holds_the_decoded_objects_at_once() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd="."
    )
    figures = json.loads(out.stdout)
    assert figures["objects"] == 4000
    assert figures["stored"] > 4000 * 2000  # the encodings, managedFields stripped
    # What stays is the encodings plus keys and indexes (1.07x); at the peak one decoded event
    # more (1.09x), and the process grew by 1.2x. Held decoded until the bookmark (before the
    # informer staged them), the peak was 2.6x and the process grew by 3.5x the encodings.
    assert figures["live"] < 1.3 * figures["stored"], figures
    assert figures["peak"] < 1.5 * figures["stored"], figures
    assert figures["rss"] < 2 * figures["stored"], figures


# Lists OBJECTS PartialObjectMetadata of about 1 KB (half of it managedFields) in one response,
# decoded whole as the client decodes a list, into an informer that drops the managedFields.
LIST_PROBE = """
import gc, json, os
from contextlib import asynccontextmanager
import anyio, orjson
from reconcile.cache.informer import SharedInformer

os.environ["KUBE_FEATURE_WatchListClient"] = "false"

OBJECTS = 10000

def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

def item(i):
    fields = {f"f:key-{k}": {} for k in range(12)}
    return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {
        "name": f"cm-{i:05d}", "namespace": "bench", "resourceVersion": str(i + 1),
        "uid": f"{i:08d}-0000-4000-8000-000000000000", "creationTimestamp": "2026-12-01T00:00:00Z",
        "labels": {"app": "bench", "shard": str(i % 16)},
        "managedFields": [{"manager": "bench", "operation": "Update", "apiVersion": "v1",
                           "time": "2026-12-01T00:00:00Z", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:data": fields}}]}}

BODY = orjson.dumps({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                     "metadata": {"resourceVersion": "99999"},
                     "items": [item(i) for i in range(OBJECTS)]})

class Lister:
    async def list(self, **kwargs):
        return orjson.loads(BODY)

    def watch(self, **kwargs):
        @asynccontextmanager
        async def stream():
            async def events():
                await anyio.sleep_forever()
                yield {}
            yield events()
        return stream()

async def main():
    informer = SharedInformer(Lister(), name="cms")
    gc.collect()
    rss = rss_kib()
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        await informer.wait_for_sync()
        assert informer.reflector.last_sync_via == "list"
        group.cancel_scope.cancel()
    gc.collect()
    stored = sum(len(v) for v in informer.indexer._items.values())
    print(json.dumps({"objects": len(informer.indexer), "stored": stored,
                      "rss": (rss_kib() - rss) * 1024}))

anyio.run(main)
"""


def test_a_list_sync_returns_the_lists_memory_after_storing() -> None:
    out = subprocess.run(
        [sys.executable, "-c", LIST_PROBE], capture_output=True, text=True, check=True, cwd="."
    )
    figures = json.loads(out.stdout)
    assert figures["objects"] == 10000
    assert figures["stored"] > 10000 * 250  # the encodings, managedFields stripped
    # The process grew by 2.2x the encodings (keys, indexes, the store's dict, small encodings'
    # pools); when the transform freed each object's managedFields while the store was filled,
    # the keys and encodings landed in those holes, the list's memory stayed: 5.9x.
    assert figures["rss"] < 3 * figures["stored"], figures
