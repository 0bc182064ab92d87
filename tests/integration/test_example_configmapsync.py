"""The multi-cluster guide's example against real apiservers: host + members from testenv.

Its members are every member of the shared Environment (``EnvironmentProvider``), among them
``restartable``, whose apiserver the test stops: the example reports that member as failed on the
host object while the others stay synced, and puts its copy right once it is back.
"""

from __future__ import annotations

from typing import Any

import pytest

from examples.configmapsync import COPY_LABEL, STATE_ANNOTATION_PREFIX, SYNC_LABEL, setup
from reconcile import Manager
from testenv import (
    ControlPlane,
    Environment,
    EnvironmentProvider,
    RequestError,
    eventually,
    running,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

SYNC = 30.0
"""Seconds a copy may take on a loaded machine (engagement, a sync, a write)."""
REJOIN = 120.0
"""Seconds a restarted member may take: the apiserver's start, the reflector's backoff (up to
30 s) and the controller's own backoff for the member's failed requests."""


def _path(namespace: str, name: str = "prices") -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps/{name}"


async def _data(plane: ControlPlane, namespace: str) -> dict[str, str] | None:
    try:
        found: dict[str, Any] = await plane.request("GET", _path(namespace))
    except RequestError as error:
        if error.status == 404:
            return None
        raise
    assert found["metadata"]["labels"][COPY_LABEL] == "true"
    data: dict[str, str] = found.get("data") or {}
    return data


async def _update(host: ControlPlane, namespace: str) -> bool:
    """Change the host ConfigMap's data; False on a Conflict with the controller's own write."""
    current = await host.request("GET", _path(namespace))
    current["data"] = {"eur": "1.10"}
    try:
        await host.request("PUT", _path(namespace), current)
    except RequestError as error:
        if error.status == 409:
            return False
        raise
    return True


async def _states(host: ControlPlane, namespace: str) -> dict[str, str]:
    source = await host.request("GET", _path(namespace))
    annotations = source["metadata"].get("annotations") or {}
    prefix = len(STATE_ANNOTATION_PREFIX)
    return {k[prefix:]: v for k, v in annotations.items() if k.startswith(STATE_ANNOTATION_PREFIX)}


async def test_the_example_keeps_the_host_configmap_in_every_member_and_reports_each(
    multicluster: Environment, restartable: ControlPlane, manager: Manager, namespace: str
) -> None:
    members = dict(multicluster.members)
    for plane in members.values():
        await plane.create_namespace(namespace)
    manager.add_provider(EnvironmentProvider(multicluster))
    setup(manager)
    source = {
        "metadata": {"name": "prices", "labels": {SYNC_LABEL: "true"}},
        "data": {"eur": "1.00"},
    }

    async def everywhere(data: dict[str, str], names: list[str]) -> bool:
        return all([await _data(members[name], namespace) == data for name in names])

    async with running(manager):
        await multicluster.host.request(
            "POST", f"/api/v1/namespaces/{namespace}/configmaps", source
        )
        await eventually(lambda: everywhere({"eur": "1.00"}, list(members)), timeout=SYNC)

        async def all_synced() -> bool:
            states = await _states(multicluster.host, namespace)
            return all(states.get(name) == "Synced" for name in members)

        await eventually(all_synced, timeout=SYNC)

        others = [name for name in members if name != restartable.name]
        await restartable.stop_apiserver()
        try:
            await eventually(lambda: _update(multicluster.host, namespace), timeout=SYNC)
            await eventually(lambda: everywhere({"eur": "1.10"}, others), timeout=SYNC)

            async def only_restartable_failed() -> bool:
                states = await _states(multicluster.host, namespace)
                failed = states.get(restartable.name, "").startswith("Failed: ")
                return failed and all(states.get(name) == "Synced" for name in others)

            await eventually(only_restartable_failed, timeout=SYNC)
        finally:
            await restartable.start_apiserver()
        await eventually(lambda: everywhere({"eur": "1.10"}, [restartable.name]), timeout=REJOIN)
        await eventually(all_synced, timeout=SYNC)

        await multicluster.host.request("DELETE", _path(namespace))

        async def gone() -> bool:
            return all([await _data(plane, namespace) is None for plane in members.values()])

        await eventually(gone, timeout=SYNC)
