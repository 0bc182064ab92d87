"""TemplateStatusWriter when the source aggregating a kind is withdrawn while it works."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from controllers.api import AggregatedStatusItem, ObjectReference
from controllers.interpreter import Interpreter
from controllers.status import TemplateStatusWriter
from reconcile import GVK, EventRecorder
from testenv import FakeClient

pytestmark = pytest.mark.asyncio(loop_scope="session")

EXAMPLE = Path(__file__).parents[2] / "examples" / "workload-interpreter"
WORKLOAD = GVK("workload.example.io", "v1alpha1", "Workload")
SUM_READY = """
function AggregateStatus(desiredObj, statusItems)
  local ready = 0
  for i = 1, #statusItems do ready = ready + statusItems[i].status.readyReplicas end
  desiredObj.status = {readyReplicas = ready}
  return desiredObj
end
"""
CUSTOMIZATION = {
    "apiVersion": "config.karmada.io/v1alpha1",
    "kind": "ResourceInterpreterCustomization",
    "metadata": {"name": "workload"},
    "spec": {
        "target": {"apiVersion": "workload.example.io/v1alpha1", "kind": "Workload"},
        "customizations": {"statusAggregation": {"luaScript": SUM_READY}},
    },
}


class Events:
    """Collects what would become Events."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str]] = []

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.recorded.append((type, reason, message))


class WithdrawingReader(FakeClient):
    """Reads like the fake, but the customization is withdrawn during the first read."""

    def __init__(self, interpreter: Interpreter) -> None:
        super().__init__(crds=[EXAMPLE / "workload-crd.yaml"])
        self.interpreter = interpreter
        self.withdraw = False

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        if self.withdraw:
            self.interpreter.remove_customization("workload")
        return await super().get(*args, **kwargs)


async def _writer() -> tuple[TemplateStatusWriter, WithdrawingReader, Events]:
    interpreter = Interpreter(thirdparty=None, native=None)
    await interpreter.apply_customization(CUSTOMIZATION)
    reader = WithdrawingReader(interpreter)
    workload = {
        "apiVersion": "workload.example.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {"replicas": 3},
    }
    await reader.create(workload)
    events = Events()
    return TemplateStatusWriter(reader, interpreter, cast(EventRecorder, events)), reader, events


RESOURCE = ObjectReference(
    apiVersion="workload.example.io/v1alpha1", kind="Workload", namespace="default", name="nginx"
)
ITEMS = [
    AggregatedStatusItem(clusterName="member1", applied=True, status={"readyReplicas": 2}),
    AggregatedStatusItem(clusterName="member2", applied=True, status={"readyReplicas": 1}),
]


async def test_status_is_aggregated_onto_the_template() -> None:
    writer, reader, events = await _writer()
    assert await writer.update(RESOURCE, ITEMS) is True
    template = await reader.get(WORKLOAD, "nginx", namespace="default")
    assert template["status"] == {"readyReplicas": 3}
    assert [reason for _, reason, _ in events.recorded] == ["AggregateStatusSucceed"]


async def test_a_source_withdrawn_meanwhile_is_no_failure() -> None:
    writer, reader, events = await _writer()
    reader.withdraw = True
    assert await writer.update(RESOURCE, ITEMS) is False
    assert events.recorded == [], "no Warning: nothing aggregates the kind any more"
    template = await reader.get(WORKLOAD, "nginx", namespace="default")
    assert "status" not in template
