"""Benchmark: initial sync of a SharedInformer over 10,000 ConfigMaps of about 2 KB, by list+watch
and by WatchList, against kubernetes-asyncio's own list + watch into model classes, in one run.

The parent starts one testenv control plane, creates the ConfigMaps once (``--concurrency``
parallel creators; a plain create records managedFields for the writer) and then runs every
contender in a subprocess of its own, given the kubeconfig path, so memory figures never mix:

- ``watchlist``: ``SharedInformer`` as it comes: a WatchList sync (one watch with
  sendInitialEvents streams the objects as events, ended by the initial-events-end bookmark) and
  the default transform (``strip_managed_fields``);
- ``strip``: the same informer made to list+watch (``KUBE_FEATURE_WatchListClient=false``);
- ``keep``: list+watch with ``transform=None``: objects stored with their managedFields;
- ``meta``: a metadata-only ``SharedInformer`` as the cache opens for ``metadata_only=True``: the
  apiserver sends PartialObjectMetadata (no data), stored with the cache's metadata transform,
  synced through a WatchList as by default;
- ``meta-list``: the same made to list+watch;
- ``peer``: kubernetes-asyncio ``CoreV1Api.list_namespaced_config_map`` deserialized into
  ``V1ConfigMap`` models kept in a dict by key, then its ``Watch().stream`` from the list's
  resourceVersion, as a hand-written informer on that client would do.

The list+watch contenders list with resourceVersion "0" (the apiserver's watch cache, one
response). Time is from the start of the list (or watch-list) to the store being filled (after a
warm-up request that opens the connection); memory is the RSS delta of the child from just before
the list to after the sync (after ``gc.collect()``; the list response is freed by then), plus, in a
separate child per contender because tracing slows Python down, the bytes tracemalloc attributes
to what was allocated since the list began and is still alive, per cached object. Time and RSS
are medians over ``--rounds`` children per contender, interleaved. A child fails the run if its
informer synced some other way than its variant says.

Run from the repository root: ``.venv/bin/python -m bench.informer [--objects N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Final

if not __package__:  # run as a script: make ``bench`` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anyio
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api
from kubernetes_asyncio.watch import Watch

from bench._cluster import CONFIGMAP, create_configmaps, create_namespace
from bench._workload import NAMESPACE, rss_kib
from reconcile import (
    CacheOptions,
    Client,
    ClusterConfig,
    SharedInformer,
    Unlimited,
    strip_managed_fields,
)
from reconcile.cache.reflector import WATCH_LIST_ENV
from testenv import Environment

__all__ = ["main"]

METADATA_VARIANT: Final = "meta"
METADATA_LIST_VARIANT: Final = "meta-list"
VARIANTS: Final = ("watchlist", "strip", "keep", METADATA_VARIANT, METADATA_LIST_VARIANT, "peer")
WATCH_LIST_VARIANTS: Final = ("watchlist", METADATA_VARIANT)
ROOT: Final = Path(__file__).resolve().parents[1]
RESULT: Final = "RESULT "


# --- children ------------------------------------------------------------------------------------


class _Probe:
    """Memory baselines taken just before the list, and the figures after the sync."""

    def __init__(self, traced: bool) -> None:
        self.traced = traced
        gc.collect()
        self.rss_before, self.peak_before = rss_kib()
        self.traced_before = 0
        if traced:
            tracemalloc.start()
            self.traced_before = tracemalloc.get_traced_memory()[0]
        self.started = time.perf_counter()

    def finish(self, objects: int) -> dict[str, Any]:
        elapsed = time.perf_counter() - self.started
        gc.collect()
        rss, peak = rss_kib()
        result: dict[str, Any] = {
            "objects": objects,
            "seconds": elapsed,
            "rss_before_kib": self.rss_before,
            "rss_delta_kib": rss - self.rss_before,
            "peak_delta_kib": peak - self.rss_before,
        }
        if self.traced:
            current, traced_peak = tracemalloc.get_traced_memory()
            result["traced_bytes"] = current - self.traced_before
            result["traced_peak_bytes"] = traced_peak - self.traced_before
            tracemalloc.stop()
        return result


async def _ours(kubeconfig: Path, traced: bool, keep: bool) -> dict[str, Any]:
    config = await ClusterConfig.from_kubeconfig(kubeconfig)
    async with Client(config, limiter=Unlimited()) as client:
        await client.resource_for(CONFIGMAP)  # warm-up: discovery, and the connection opened
        probe = _Probe(traced)
        informer = SharedInformer(
            client.lister_watcher(CONFIGMAP, namespace=NAMESPACE),
            name="configmaps",
            transform=None if keep else strip_managed_fields,
        )
        async with anyio.create_task_group() as group:
            group.start_soon(informer.run)
            await informer.wait_for_sync()
            result = probe.finish(len(informer.indexer))
            result["via"] = informer.reflector.last_sync_via
            group.cancel_scope.cancel()
        return result


async def _metadata_only(kubeconfig: Path, traced: bool) -> dict[str, Any]:
    """The metadata-only informer a Cache opens for ``get_informer(..., metadata_only=True)``."""
    config = await ClusterConfig.from_kubeconfig(kubeconfig)
    async with Client(config, limiter=Unlimited()) as client:
        await client.resource_for(CONFIGMAP)  # warm-up, as for the others
        probe = _Probe(traced)
        informer = SharedInformer(
            client.lister_watcher(CONFIGMAP, namespace=NAMESPACE, metadata_only=True),
            name="configmaps metadata",
            transform=CacheOptions().scope_of(CONFIGMAP).transform_for(metadata_only=True),
        )
        async with anyio.create_task_group() as group:
            group.start_soon(informer.run)
            await informer.wait_for_sync()
            result = probe.finish(len(informer.indexer))
            result["via"] = informer.reflector.last_sync_via
            group.cancel_scope.cancel()
        return result


async def _peer(kubeconfig: Path, traced: bool) -> dict[str, Any]:
    configuration = Configuration()  # the peer loads its kubeconfig with its own loader
    await kube_config.load_kube_config(
        config_file=str(kubeconfig), client_configuration=configuration, persist_config=False
    )
    async with ApiClient(configuration=configuration) as api:
        core = CoreV1Api(api)
        await core.get_api_resources()  # warm-up: the connection opened
        probe = _Probe(traced)
        listing = await core.list_namespaced_config_map(NAMESPACE, resource_version="0")
        store: dict[str, Any] = {
            f"{item.metadata.namespace}/{item.metadata.name}": item for item in listing.items
        }
        resource_version = listing.metadata.resource_version
        del listing

        async def watch() -> None:
            async with Watch() as stream:
                async for event in stream.stream(
                    core.list_namespaced_config_map,
                    NAMESPACE,
                    resource_version=resource_version,
                    allow_watch_bookmarks=True,
                    timeout_seconds=300,
                ):
                    obj = event["object"]
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        key = f"{obj.metadata.namespace}/{obj.metadata.name}"
                        if event["type"] == "DELETED":
                            store.pop(key, None)
                        else:
                            store[key] = obj

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            result = probe.finish(len(store))
            group.cancel_scope.cancel()
        return result


def child(variant: str, kubeconfig: Path, traced: bool) -> None:
    """Run one contender once and print its figures as a RESULT line."""
    if variant == "peer":
        result = anyio.run(_peer, kubeconfig, traced)
    else:
        if variant not in WATCH_LIST_VARIANTS:
            os.environ[WATCH_LIST_ENV] = "false"  # read when the informer's reflector is made
        if variant in (METADATA_VARIANT, METADATA_LIST_VARIANT):
            result = anyio.run(_metadata_only, kubeconfig, traced)
        else:
            result = anyio.run(_ours, kubeconfig, traced, variant == "keep")
    print(RESULT + json.dumps(result), flush=True)


# --- parent --------------------------------------------------------------------------------------


def _spawn(variant: str, kubeconfig: Path, traced: bool) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.informer", "--child", variant, "--kubeconfig"]
    argv += [str(kubeconfig), *(["--traced"] if traced else [])]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"child {variant} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1].removeprefix(RESULT))
    wanted = None if variant == "peer" else "list"
    if variant in WATCH_LIST_VARIANTS:
        wanted = "watch-list"
    if result.get("via") != wanted:
        raise RuntimeError(f"child {variant} synced by {result.get('via')}, not {wanted}")
    return result


async def _prepare(kubeconfig: Path, objects: int, concurrency: int) -> None:
    config = await ClusterConfig.from_kubeconfig(kubeconfig)
    async with Client(config, limiter=Unlimited()) as client:
        await create_namespace(client)
        seconds = await create_configmaps(client, objects, concurrency=concurrency)
        sample = await client.get(CONFIGMAP, "cm-00000", namespace=NAMESPACE)
    managed = json.dumps(sample["metadata"].get("managedFields", []))
    whole = json.dumps(sample)
    print(f"created {objects} ConfigMaps in {seconds:.1f} s ({objects / seconds:.0f}/s)")
    print(f"one object: {len(whole)} bytes of JSON, of which managedFields {len(managed)}")


def _measure(kubeconfig: Path, rounds: int) -> None:
    timed: dict[str, list[dict[str, Any]]] = {variant: [] for variant in VARIANTS}
    for _ in range(rounds):
        for variant in VARIANTS:
            timed[variant].append(_spawn(variant, kubeconfig, traced=False))
    traced = {variant: _spawn(variant, kubeconfig, traced=True) for variant in VARIANTS}

    def median(variant: str, key: str) -> float:
        return statistics.median(float(result[key]) for result in timed[variant])

    labels = {
        "watchlist": "reconcile, WatchList (default)",
        "strip": "reconcile, list+watch",
        "keep": "reconcile, list+watch, transform=None",
        METADATA_VARIANT: "reconcile, WatchList, metadata only",
        METADATA_LIST_VARIANT: "reconcile, list+watch, metadata only",
        "peer": "peer: kubernetes-asyncio models",
    }
    objects = timed["peer"][0]["objects"]
    print(f"\ninitial sync of {objects} ConfigMaps, median of {rounds} children per contender")
    base = statistics.median(float(r["rss_before_kib"]) for r in timed["watchlist"]) / 1024
    print(f"(each child's RSS before the list, after imports and one request: {base:.0f} MiB)")
    header = f"{'contender':<38} {'sync s':>7} {'RSS MiB':>8} {'RSS B/obj':>10}"
    print(f"{header} {'peak MiB':>9} {'traced B/obj':>13}")
    for variant in VARIANTS:
        seconds = median(variant, "seconds")
        rss = median(variant, "rss_delta_kib")
        peak = median(variant, "peak_delta_kib")
        per_object = rss * 1024 / objects
        traced_per_object = traced[variant]["traced_bytes"] / objects
        print(
            f"{labels[variant]:<38} {seconds:7.2f} {rss / 1024:8.1f} {per_object:10.0f}"
            f" {peak / 1024:9.1f} {traced_per_object:13.0f}"
        )
    print("\nratios (below 1: the first is faster or smaller)")
    pairs = [("watchlist", "strip"), ("watchlist", "peer"), ("strip", "peer")]
    metadata = [(METADATA_VARIANT, METADATA_LIST_VARIANT), (METADATA_VARIANT, "peer")]
    for variant, other in [*pairs, *metadata]:
        time_ratio = median(variant, "seconds") / median(other, "seconds")
        rss_ratio = median(variant, "rss_delta_kib") / median(other, "rss_delta_kib")
        peak_ratio = median(variant, "peak_delta_kib") / median(other, "peak_delta_kib")
        traced_ratio = traced[variant]["traced_bytes"] / traced[other]["traced_bytes"]
        print(
            f"{variant + ' / ' + other:<38} time {time_ratio:5.2f}  RSS {rss_ratio:5.2f}"
            f"  peak {peak_ratio:5.2f}  traced {traced_ratio:5.2f}"
        )


async def _run(args: argparse.Namespace) -> None:
    if args.kubeconfig is not None:  # an existing cluster, already filled by an earlier run
        _measure(args.kubeconfig, args.rounds)
        return
    async with Environment() as env:
        kubeconfig = env.host.kubeconfig
        await _prepare(kubeconfig, args.objects, args.concurrency)
        # The children run in threads so this loop keeps the control plane's processes served.
        await anyio.to_thread.run_sync(_measure, kubeconfig, args.rounds)


def main() -> None:
    """Parse the command line; run the parent, or one child."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=20, help="parallel creators")
    parser.add_argument("--rounds", type=int, default=3, help="timed children per contender")
    parser.add_argument("--kubeconfig", type=Path, help="reuse a filled cluster (no testenv)")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.kubeconfig, args.traced)
    else:
        anyio.run(_run, args)


if __name__ == "__main__":
    main()
