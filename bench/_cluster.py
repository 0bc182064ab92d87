"""The benchmarks' writes: namespace, ConfigMaps and touches, through reconcile's own Client.

Writes go out ``concurrency`` at a time; pass a Client with an unlimited rate limiter.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

from bench._workload import NAMESPACE, ROUND_ANNOTATION, configmap, name_of_index
from reconcile import GVK, AlreadyExists, Client

__all__ = [
    "CONFIGMAP",
    "create_configmaps",
    "create_namespace",
    "run_parallel",
    "touch_configmaps",
]

CONFIGMAP: Final = GVK("", "v1", "ConfigMap")


async def run_parallel(
    count: int, concurrency: int, work: Callable[[int], Awaitable[None]]
) -> float:
    """Run ``work(i)`` for every i < count with ``concurrency`` workers; returns the seconds."""
    indexes = iter(range(count))

    async def worker() -> None:
        for index in indexes:
            await work(index)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(worker)
    return time.perf_counter() - started


async def create_namespace(client: Client, namespace: str = NAMESPACE) -> None:
    """Create ``namespace`` unless it exists."""
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    with contextlib.suppress(AlreadyExists):
        await client.create(body)


async def create_configmaps(
    client: Client, count: int, *, concurrency: int = 20, namespace: str = NAMESPACE
) -> float:
    """Create ``count`` ConfigMaps (a plain create records managedFields for the writer)."""

    async def create(index: int) -> None:
        await client.create(configmap(index, namespace))

    return await run_parallel(count, concurrency, create)


async def touch_configmaps(
    client: Client,
    count: int,
    round_: int,
    *,
    concurrency: int = 20,
    namespace: str = NAMESPACE,
) -> float:
    """Set every ConfigMap's round annotation to ``round_`` (one merge patch each)."""
    patch = {"metadata": {"annotations": {ROUND_ANNOTATION: str(round_)}}}

    async def touch(index: int) -> None:
        await client.patch(CONFIGMAP, name_of_index(index), patch, namespace=namespace)

    return await run_parallel(count, concurrency, touch)
