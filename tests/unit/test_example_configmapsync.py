"""The multi-cluster guide's example (examples/configmapsync) on testenv's fake clusters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from examples.configmapsync import COPY_LABEL, STATE_ANNOTATION_PREFIX, SYNC_LABEL, setup
from reconcile import GVK, Manager, ManagerOptions, NotFound
from testenv import FakeClient, FakeClusters, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}


def _member(_name: str) -> FakeClient:
    return FakeClient(objects=[NAMESPACE])  # copies go to namespaces the member has


def _source(data: dict[str, str], name: str = "prices") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "labels": {SYNC_LABEL: "true", "team": "web"},
        },
        "data": data,
    }


@asynccontextmanager
async def _running(host: FakeClient, members: FakeClusters) -> AsyncIterator[Manager]:
    manager = Manager(client=host, options=ManagerOptions(metrics_bind_address="0"))
    manager.add_provider(members)
    setup(manager)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            await group.start(manager.start)
            yield manager
            manager.stop()


async def _copy(client: FakeClient, name: str = "prices") -> dict[str, Any] | None:
    try:
        return await client.get(CONFIGMAP, name, namespace="shop")
    except NotFound:
        return None


async def _copies_hold(members: FakeClusters, names: list[str], data: dict[str, str]) -> None:
    async def probe() -> bool:
        for name in names:
            copy = await _copy(members[name])
            if copy is None or copy.get("data") != data:
                return False
        return True

    await eventually(probe, timeout=10)


async def _states(host: FakeClient) -> dict[str, str]:
    source = await host.get(CONFIGMAP, "prices", namespace="shop")
    annotations = source["metadata"].get("annotations") or {}
    prefix = len(STATE_ANNOTATION_PREFIX)
    return {k[prefix:]: v for k, v in annotations.items() if k.startswith(STATE_ANNOTATION_PREFIX)}


async def test_a_host_configmap_is_kept_in_every_member_and_deleted_with_it() -> None:
    host = FakeClient(objects=[NAMESPACE])
    members = FakeClusters(["east", "west"], factory=_member)
    async with _running(host, members):
        await host.create(_source({"eur": "1.00"}))
        await _copies_hold(members, ["east", "west"], {"eur": "1.00"})
        copy = await _copy(members["east"])
        assert copy is not None
        assert copy["metadata"]["labels"] == {"team": "web", COPY_LABEL: "true"}

        async def reported() -> bool:
            return await _states(host) == {"east": "Synced", "west": "Synced"}

        await eventually(reported, timeout=10)

        source = await host.get(CONFIGMAP, "prices", namespace="shop")
        source["data"] = {"eur": "1.10"}
        await host.update(source)
        await _copies_hold(members, ["east", "west"], {"eur": "1.10"})

        # A copy changed in a member is put back.
        drifted = await members["west"].get(CONFIGMAP, "prices", namespace="shop")
        drifted["data"] = {"eur": "0"}
        await members["west"].update(drifted)
        await _copies_hold(members, ["west"], {"eur": "1.10"})

        # A member engaged at run time gets the copy (through its namespaces' initial list).
        members.add("north", _member("north"))
        await _copies_hold(members, ["north"], {"eur": "1.10"})

        await host.delete(CONFIGMAP, "prices", namespace="shop")

        async def gone() -> bool:
            return all([await _copy(members[m]) is None for m in ("east", "west", "north")])

        await eventually(gone, timeout=10)


async def test_a_configmap_of_someone_else_is_left_alone_and_reported() -> None:
    host = FakeClient(objects=[NAMESPACE])
    theirs = {**_source({"eur": "9"}), "metadata": {"name": "prices", "namespace": "shop"}}
    members = FakeClusters(["east"], factory=lambda _n: FakeClient(objects=[NAMESPACE, theirs]))
    members.add("west", _member("west"))
    async with _running(host, members):
        await host.create(_source({"eur": "1.00"}))
        await _copies_hold(members, ["west"], {"eur": "1.00"})

        async def reported() -> bool:
            states = await _states(host)
            return states.get("west") == "Synced" and "is not a copy" in states.get("east", "")

        await eventually(reported, timeout=10)
        kept = await _copy(members["east"])
        assert kept is not None
        assert kept["data"] == {"eur": "9"}
        await host.delete(CONFIGMAP, "prices", namespace="shop")
        await eventually(lambda: _absent(members["west"]), timeout=10)
        assert await _copy(members["east"]) is not None  # not ours: never deleted


async def _absent(client: FakeClient) -> bool:
    return await _copy(client) is None


async def test_the_guides_code_is_the_examples() -> None:
    # docs/multicluster-framework.md quotes the example: every line of code it shows (comments
    # aside) is in the file, so the page cannot drift from the code the tests run.
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    page = (root / "docs/multicluster-framework.md").read_text()
    example = (root / "examples/configmapsync/controller.py").read_text()
    section = page[page.index("## A multi-cluster controller") : page.index("## Providers")]
    blocks = [b.split("```", 1)[0] for b in section.split("```python\n")[1:]]
    shown = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    code = {line.strip() for line in example.splitlines()}
    missing = [line for line in shown if line and not line.startswith("#") and line not in code]
    assert blocks
    assert not missing, missing
