"""The rows ``reconcile get`` makes of Works, and the table it prints."""

from __future__ import annotations

from typing import Any

from controllers.commands.get import MemberRow, _rows_of_work, render_rows
from reconcile import GVK

DEPLOYMENT = GVK("apps", "v1", "Deployment")


def work(*, applied: str | None, status: dict[str, Any] | None) -> dict[str, Any]:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "team"},
        "spec": {"replicas": 2},
    }
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "team"},
    }
    obj: dict[str, Any] = {
        "metadata": {"name": "w", "namespace": "karmada-es-m1"},
        "spec": {"workload": {"manifests": [config, manifest]}},
        "status": {},
    }
    if applied is not None:
        obj["status"]["conditions"] = [{"type": "Applied", "status": applied}]
    if status is not None:
        identifier = {
            "ordinal": 1,
            "group": "apps",
            "version": "v1",
            "kind": "Deployment",
            "namespace": "team",
            "name": "nginx",
        }
        obj["status"]["manifestStatuses"] = [
            {"identifier": identifier, "status": status, "health": "Healthy"}
        ]
    return obj


def test_a_reported_member_copy_shows_ready_replicas_applied_and_health() -> None:
    rows = _rows_of_work(work(applied="True", status={"readyReplicas": 1}), "m1", DEPLOYMENT)
    assert rows == [MemberRow("team", "nginx", "m1", "1/2", "True", "Healthy")]


def test_a_copy_not_reported_yet_shows_dashes() -> None:
    rows = _rows_of_work(work(applied=None, status=None), "m1", DEPLOYMENT)
    assert rows == [MemberRow("team", "nginx", "m1", "0/2", "-", "-")]


def test_kinds_without_replicas_show_no_ready_count() -> None:
    rows = _rows_of_work(work(applied="False", status=None), "m1", GVK("", "v1", "ConfigMap"))
    assert rows == [MemberRow("team", "c", "m1", "-", "False", "-")]


def test_the_table_pads_columns_as_kubectl_and_adds_namespace_on_request() -> None:
    rows = [
        MemberRow("team", "nginx", "member1", "2/2", "True", "Healthy"),
        MemberRow("team", "nginx", "m2", "1/1", "True", "Healthy"),
    ]
    assert render_rows(rows) == [
        "NAME    CLUSTER   READY   APPLIED   HEALTH",
        "nginx   member1   2/2     True      Healthy",
        "nginx   m2        1/1     True      Healthy",
    ]
    assert render_rows(rows[:1], with_namespace=True)[0].split() == [
        "NAMESPACE",
        "NAME",
        "CLUSTER",
        "READY",
        "APPLIED",
        "HEALTH",
    ]
