"""Interpreter customizations applied from the API, on the fake client through real informers."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from controllers import interpreterconfig
from controllers.api import crd_paths
from controllers.cluster import Members
from controllers.context import Context
from controllers.interpreter import Operation
from controllers.interpreter.webhook import WebhookBackend
from reconcile import GVK, Manager, ManagerOptions
from testenv import FakeClient, eventually, load_crds

pytestmark = pytest.mark.asyncio(loop_scope="session")

WORKLOAD = GVK("workload.example.io", "v1alpha1", "Workload")
EVENT = GVK("", "v1", "Event")
WEBHOOK_CONFIGURATION = GVK(
    "config.karmada.io", "v1alpha1", "ResourceInterpreterWebhookConfiguration"
)


def _customization(script: str) -> dict[str, Any]:
    return {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": "workload"},
        "spec": {
            "target": {"apiVersion": "workload.example.io/v1alpha1", "kind": "Workload"},
            "customizations": {"healthInterpretation": {"luaScript": script}},
        },
    }


async def test_customizations_follow_the_api_and_bad_lua_is_an_event() -> None:
    fake = FakeClient(crds=load_crds(crd_paths()))
    manager = Manager(client=fake, options=ManagerOptions(metrics_bind_address="0"))
    context = Context(manager, Members.of(manager))
    interpreterconfig.setup(context)
    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        await fake.create(_customization("function InterpretHealth(observedObj) return true"))

        async def warned() -> bool:
            events = (await fake.list(EVENT, namespace="default"))["items"]
            return any(e["reason"] == "InvalidCustomization" for e in events)

        await eventually(warned)
        assert not context.interpreter.handles(WORKLOAD, Operation.INTERPRET_HEALTH)

        current = await fake.get(
            GVK("config.karmada.io", "v1alpha1", "ResourceInterpreterCustomization"), "workload"
        )
        current["spec"] = _customization(
            "function InterpretHealth(observedObj) return observedObj.spec.ok end"
        )["spec"]
        await fake.update(current)

        async def handled() -> bool:
            return context.interpreter.handles(WORKLOAD, Operation.INTERPRET_HEALTH)

        await eventually(handled)
        healthy = {
            "apiVersion": "workload.example.io/v1alpha1",
            "kind": "Workload",
            "spec": {"ok": True},
        }
        assert await context.interpreter.interpret_health(healthy) is True
        manager.stop()


def _webhook_configuration(name: str, timeout: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "workloads.example.com",
                "clientConfig": {"url": "https://127.0.0.1:1/never-called"},
                "rules": [
                    {
                        "operations": ["InterpretReplica"],
                        "apiGroups": ["workload.example.io"],
                        "apiVersions": ["v1alpha1"],
                        "kinds": ["Workload"],
                    }
                ],
                "interpreterContextVersions": ["v1alpha1"],
                "timeoutSeconds": timeout,
            }
        ],
    }


async def test_webhook_backends_are_closed_when_replaced_deleted_or_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closed: list[WebhookBackend] = []

    class Recording(WebhookBackend):
        async def aclose(self) -> None:
            closed.append(self)
            await super().aclose()

    monkeypatch.setattr(interpreterconfig, "WebhookBackend", Recording)
    fake = FakeClient(crds=load_crds(crd_paths()))
    manager = Manager(client=fake, options=ManagerOptions(metrics_bind_address="0"))
    context = Context(manager, Members.of(manager))
    interpreterconfig.setup(context)
    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        await fake.create(_webhook_configuration("a"))
        await fake.create(_webhook_configuration("b"))

        async def both() -> bool:
            return context.interpreter.webhook_names() == ["a", "b"]

        await eventually(both)
        assert closed == []
        current = await fake.get(WEBHOOK_CONFIGURATION, "a")
        current["webhooks"][0]["timeoutSeconds"] = 5
        await fake.update(current)
        await fake.delete(WEBHOOK_CONFIGURATION, "b")

        async def replaced_and_deleted() -> bool:
            return len(closed) == 2 and context.interpreter.webhook_names() == ["a"]

        await eventually(replaced_and_deleted)
        manager.stop()
    assert len(closed) == 3
    assert len({id(backend) for backend in closed}) == 3, "each backend closed once"
    assert context.interpreter.webhook_names() == []
