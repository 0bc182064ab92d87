"""End to end: the seed's Workload CRD, which only the example webhook interpreter understands.

The example server (examples/workload-interpreter/server.py) runs in-process over HTTPS with a
serving certificate from a test CA; a ResourceInterpreterWebhookConfiguration on the host points
the controller-manager at it by URL with that CA as caBundle. Workload is unknown to the native
interpreter: without the webhook its replicas would not be divided, the member's ``spec.paused``
would be overwritten and no status would come back. A middleware records every request the server
answers, so the test also sees the webhook was asked.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from aiohttp.typedefs import Handler

from controllers.api import (
    CLUSTER_GVK,
    RESOURCE_BINDING_GVK,
    RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK,
)
from controllers.interpreter import Operation
from controllers.scheduler import api_enabled
from reconcile import GVK, NotFound
from testenv import Environment, eventually
from testenv.certs import CertificateAuthority
from tests.e2e.stack import MEMBERS, Stack, running
from tests.workload_example import EXAMPLE, SERVER

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

WORKLOAD = GVK("workload.example.io", "v1alpha1", "Workload")
NAME = "nginx"
BINDING = "nginx-workload"
OPERATIONS = (
    Operation.INTERPRET_REPLICA,
    Operation.REVISE_REPLICA,
    Operation.RETAIN,
    Operation.AGGREGATE_STATUS,
)


def _manifest(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((EXAMPLE / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


class Recorder:
    """The ResourceInterpreterRequests the example server was sent, in order."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        # aiohttp keeps the body read here for the example's own handler.
        self.requests.append(json.loads(await request.read())["request"])
        return await handler(request)

    def of(self, operation: Operation) -> list[dict[str, Any]]:
        """The requests of ``operation``."""
        return [r for r in self.requests if r.get("operation") == operation]


@asynccontextmanager
async def _example_server(recorder: Recorder, tls: Path) -> AsyncIterator[tuple[str, bytes]]:
    """The example webhook on a free port of 127.0.0.1: yields its URL and the CA's PEM."""
    ca = CertificateAuthority("workload-e2e-ca")
    cert, key = ca.issue_serving(["127.0.0.1"]).write(tls, "serving")
    app = SERVER.make_app()
    app.middlewares.append(recorder.middleware)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=SERVER.server_tls(cert, key))
        await site.start()
        yield f"https://127.0.0.1:{runner.addresses[0][1]}{SERVER.PATH}", ca.cert_pem
    finally:
        await runner.cleanup()


def _webhook_configuration(name: str, url: str, ca_pem: bytes) -> dict[str, Any]:
    """The example's configuration, calling ``url`` (outside a cluster: no Service to go by)."""
    configuration = _manifest("webhook-configuration.yaml")
    configuration["metadata"]["name"] = name
    for webhook in configuration["webhooks"]:
        webhook["clientConfig"] = {"url": url, "caBundle": base64.b64encode(ca_pem).decode()}
        webhook["timeoutSeconds"] = 10  # a shared, busy test machine
    return configuration


@asynccontextmanager
async def _configured(stack: Stack, url: str, ca_pem: bytes) -> AsyncIterator[None]:
    """The webhook configuration on the host, loaded by the interpreter; deleted afterwards."""
    interpreter = stack.context.interpreter
    assert not interpreter.handles(WORKLOAD, Operation.REVISE_REPLICA), "nothing else does"
    name = f"workload-{stack.namespace}"
    await stack.host.create(_webhook_configuration(name, url, ca_pem))
    try:

        async def loaded() -> bool:
            return all(interpreter.handles(WORKLOAD, operation) for operation in OPERATIONS)

        await eventually(loaded, timeout=60)
        yield
    finally:
        await stack.host.delete(RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK, name)

        async def withdrawn() -> bool:
            return name not in interpreter.webhook_names()

        await eventually(withdrawn, timeout=60)


async def test_workload_divided_retained_and_aggregated_by_the_webhook(
    joined: Environment, namespace: str, tmp_path: Path
) -> None:
    crd = [EXAMPLE / "workload-crd.yaml"]
    for plane in (joined.host, *(joined.members[name] for name in MEMBERS)):
        await plane.install_crds(crd)
    recorder = Recorder()
    # Exited in reverse: the configuration goes first, then the manager, the server last.
    async with (
        _example_server(recorder, tmp_path) as (url, ca_pem),
        running(joined, namespace) as stack,
        _configured(stack, url, ca_pem),
    ):
        await _divided(stack, recorder)
        await _paused_kept_while_the_template_changes(stack, recorder)
        await _ready_replicas_aggregated(stack, recorder)
        await _deleted_from_the_members(stack)


async def _member_workload(stack: Stack, cluster: str) -> dict[str, Any] | None:
    try:
        return await stack.members[cluster].get(WORKLOAD, NAME, namespace=stack.namespace)
    except NotFound:
        return None


async def _create(stack: Stack) -> None:
    # A member's apiEnablements are its discovery as last polled, maybe before the CRD was
    # installed: scheduled then, the Divided binding would get member1 alone, and keep it
    # (Karmada does not reschedule a Divided binding when a cluster changes).
    async def served() -> bool:
        clusters = [await stack.host.get(CLUSTER_GVK, name) for name in MEMBERS]
        return all(api_enabled(c, WORKLOAD.api_version, WORKLOAD.kind) for c in clusters)

    await eventually(served, timeout=60, interval=0.2)
    for manifest in ("workload.yaml", "propagationpolicy.yaml"):
        obj = _manifest(manifest)
        obj["metadata"]["namespace"] = stack.namespace
        await stack.host.create(obj)


async def _wait_replicas(stack: Stack, expected: dict[str, int | None]) -> None:
    found: dict[str, int | None] = {}

    async def reached() -> bool:
        for cluster in MEMBERS:
            workload = await _member_workload(stack, cluster)
            found[cluster] = workload["spec"]["replicas"] if workload else None
        return found == expected

    try:
        await eventually(reached, timeout=90, interval=0.2)
    except AssertionError as error:
        raise AssertionError(f"member replicas {found}, expected {expected}") from error


async def _divided(stack: Stack, recorder: Recorder) -> None:
    await _create(stack)
    await _wait_replicas(stack, {"member1": 2, "member2": 1})
    interpreted = {
        r["object"]["spec"]["replicas"] for r in recorder.of(Operation.INTERPRET_REPLICA)
    }
    assert interpreted == {3}, "the template's replicas were interpreted by the webhook"
    revised = {r["replicas"] for r in recorder.of(Operation.REVISE_REPLICA)}
    assert {1, 2} <= revised, "each member's share was revised by the webhook"


def _image(workload: dict[str, Any]) -> str:
    return str(workload["spec"]["template"]["spec"]["containers"][0]["image"])


async def _paused_kept_while_the_template_changes(stack: Stack, recorder: Recorder) -> None:
    ns = stack.namespace
    # A member-side user or controller pauses its copy; Karmada must not undo that.
    await stack.members["member1"].patch(WORKLOAD, NAME, {"spec": {"paused": True}}, namespace=ns)
    # A merge patch: the status controller writes the template's status meanwhile.
    containers = [{"name": "nginx", "image": "nginx:1.27"}]
    change = {"spec": {"template": {"spec": {"containers": containers}}}}
    await stack.host.patch(WORKLOAD, NAME, change, namespace=ns)

    async def arrived() -> dict[str, dict[str, Any]] | None:
        found = {cluster: await _member_workload(stack, cluster) for cluster in MEMBERS}
        if all(w is not None and _image(w) == "nginx:1.27" for w in found.values()):
            return {cluster: w for cluster, w in found.items() if w is not None}
        return None

    members = await eventually(arrived, timeout=90, interval=0.2)
    assert members["member1"]["spec"].get("paused") is True, "the member's pause was retained"
    assert not members["member2"]["spec"].get("paused"), "member2 was never paused"
    assert members["member1"]["spec"]["replicas"] == 2, "re-applied with member1's share"
    assert members["member2"]["spec"]["replicas"] == 1
    paused_seen = [
        r
        for r in recorder.of(Operation.RETAIN)
        if r["observedObject"]["spec"].get("paused") is True
        and r["object"]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    ]
    assert paused_seen, "Retain was asked with the paused member object and the new template"
    template = await stack.host.get(WORKLOAD, NAME, namespace=ns)
    assert template["spec"]["paused"] is False, "the template itself is untouched"


async def _ready_replicas_aggregated(stack: Stack, recorder: Recorder) -> None:
    ns = stack.namespace
    # testenv runs no controllers in the members: play the Workload controller.
    ready = {"member1": 2, "member2": 1}
    for cluster, count in ready.items():
        workload = await stack.members[cluster].get(WORKLOAD, NAME, namespace=ns)
        workload["status"] = {"readyReplicas": count}
        await stack.members[cluster].update_status(workload)

    async def aggregated() -> bool:
        template = await stack.host.get(WORKLOAD, NAME, namespace=ns)
        return (template.get("status") or {}).get("readyReplicas") == 3

    await eventually(aggregated, timeout=90, interval=0.2)
    binding = await stack.host.get(RESOURCE_BINDING_GVK, BINDING, namespace=ns)
    items = binding["status"]["aggregatedStatus"]
    assert [(i["clusterName"], i["applied"], i.get("status")) for i in items] == [
        ("member1", True, {"readyReplicas": 2}),
        ("member2", True, {"readyReplicas": 1}),
    ]
    statuses = [
        [i.get("status") for i in r["aggregatedStatus"]]
        for r in recorder.of(Operation.AGGREGATE_STATUS)
    ]
    assert [{"readyReplicas": 2}, {"readyReplicas": 1}] in statuses, "the webhook summed them"


async def _deleted_from_the_members(stack: Stack) -> None:
    # Leave no Workloads behind for later controller-managers of the session to manage without
    # the webhook: the template's binding, its Works and the member objects go with it.
    await stack.host.delete(WORKLOAD, NAME, namespace=stack.namespace)

    async def gone() -> bool:
        return all([await _member_workload(stack, cluster) is None for cluster in MEMBERS])

    await eventually(gone, timeout=90, interval=0.2)


async def test_a_workload_seen_before_its_webhook_is_divided_once_it_is_loaded(
    joined: Environment, namespace: str, tmp_path: Path
) -> None:
    crd = [EXAMPLE / "workload-crd.yaml"]
    for plane in (joined.host, *(joined.members[name] for name in MEMBERS)):
        await plane.install_crds(crd)
    async with (
        _example_server(Recorder(), tmp_path) as (url, ca_pem),
        running(joined, namespace) as stack,
    ):
        await _create(stack)
        # Nothing interprets a Workload yet: no replicas to divide, each member gets the template.
        await _wait_replicas(stack, {"member1": 3, "member2": 3})
        async with _configured(stack, url, ca_pem):
            await _wait_replicas(stack, {"member1": 2, "member2": 1})
            await _deleted_from_the_members(stack)
