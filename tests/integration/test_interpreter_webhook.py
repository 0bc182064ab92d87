"""The interpreter webhook client against real HTTPS servers: the Workload example and fakes.

The example server (examples/workload-interpreter/server.py) runs in-process on a free port with
a serving certificate from a test CA, once also as a program; fake servers answer the ways a
webhook can go wrong. The Workload CRD and the example's manifests go into the testenv host to
prove they are valid.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import pytest_asyncio
import yaml
from aiohttp import web
from anyio.abc import ByteReceiveStream

from controllers.api import crd_paths
from controllers.interpreter.backend import Backend
from controllers.interpreter.types import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    NotSupported,
    Operation,
)
from controllers.interpreter.webhook import (
    CONTEXT_API_VERSION,
    CONTEXT_KIND,
    InvalidWebhookConfiguration,
    WebhookBackend,
    WebhookConnectionError,
    WebhookError,
    WebhookHTTPError,
    WebhookInvalidResponse,
    WebhookPatchError,
    WebhookRejected,
    WebhookTimeout,
    WebhookTLSError,
    WebhookUIDMismatch,
    webhooks_from,
)
from reconcile import GVK
from testenv import ControlPlane, RequestError
from testenv.certs import CertificateAuthority
from tests.workload_example import EXAMPLE, SERVER

pytestmark = pytest.mark.asyncio(loop_scope="session")

WORKLOAD_GVK = GVK("workload.example.io", "v1alpha1", "Workload")
FOUR_OPERATIONS = ["InterpretReplica", "ReviseReplica", "Retain", "AggregateStatus"]


def _workload(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "workload.example.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 3,
            "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}},
            **spec,
        },
    }


def _configuration(
    url: str,
    ca_pem: bytes | None,
    *,
    name: str = "test",
    operations: list[str] | None = None,
    **webhook: Any,
) -> dict[str, Any]:
    client_config: dict[str, Any] = {"url": url}
    if ca_pem is not None:
        client_config["caBundle"] = base64.b64encode(ca_pem).decode()
    hook = {
        "name": "workloads.example.com",
        "clientConfig": client_config,
        "rules": [
            {
                "operations": operations or FOUR_OPERATIONS,
                "apiGroups": ["workload.example.io"],
                "apiVersions": ["v1alpha1"],
                "kinds": ["Workload"],
            }
        ],
        "interpreterContextVersions": ["v1alpha1"],
        **webhook,
    }
    return {
        "apiVersion": CONTEXT_API_VERSION,
        "kind": "ResourceInterpreterWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [hook],
    }


@asynccontextmanager
async def _serving(app: web.Application, cert: Path, key: Path) -> AsyncIterator[str]:
    """Serve ``app`` over HTTPS on a free port of 127.0.0.1; yields ``https://127.0.0.1:PORT``."""
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=SERVER.server_tls(cert, key))
        await site.start()
        yield f"https://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority("workload-interpreter-test-ca")


@pytest.fixture(scope="module")
def serving_files(
    ca: CertificateAuthority, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    pair = ca.issue_serving(["127.0.0.1", "localhost"])
    return pair.write(tmp_path_factory.mktemp("tls"), "serving")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def example_url(serving_files: tuple[Path, Path]) -> AsyncIterator[str]:
    """The URL of the example Workload webhook, served in-process."""
    async with _serving(SERVER.make_app(), *serving_files) as base:
        yield base + SERVER.PATH


@asynccontextmanager
async def _backend(*configurations: dict[str, Any]) -> AsyncIterator[WebhookBackend]:
    async with WebhookBackend(configurations) as backend:
        yield backend


# -- the four operations of the example, end to end -------------------------------------------


async def test_interpret_replica_answers_spec_replicas(
    example_url: str, ca: CertificateAuthority
) -> None:
    async with _backend(_configuration(example_url, ca.cert_pem)) as backend:
        assert await backend.get_replicas(_workload()) == (3, None)
        unset = _workload()
        del unset["spec"]["replicas"]
        assert await backend.get_replicas(unset) == (1, None)


async def test_revise_replica_patches_spec_replicas(
    example_url: str, ca: CertificateAuthority
) -> None:
    workload = _workload()
    async with _backend(_configuration(example_url, ca.cert_pem)) as backend:
        revised = await backend.revise_replica(workload, 2)
    assert revised["spec"]["replicas"] == 2
    assert workload["spec"]["replicas"] == 3, "the argument must not change"
    revised["spec"]["replicas"] = 3
    assert revised == workload, "nothing but spec.replicas may change"


async def test_retain_keeps_paused_from_the_member(
    example_url: str, ca: CertificateAuthority
) -> None:
    async with _backend(_configuration(example_url, ca.cert_pem)) as backend:
        paused_in_member = await backend.retain(_workload(), _workload(paused=True))
        resumed_in_member = await backend.retain(_workload(paused=True), _workload())
        unchanged = await backend.retain(_workload(paused=True), _workload(paused=True))
    assert paused_in_member["spec"]["paused"] is True
    assert "paused" not in resumed_in_member["spec"]
    assert unchanged == _workload(paused=True)


async def test_aggregate_status_sums_ready_replicas(
    example_url: str, ca: CertificateAuthority
) -> None:
    workload = {**_workload(), "status": {"readyReplicas": 0}}
    items = [
        AggregatedStatusItem("member1", {"readyReplicas": 2}, applied=True),
        AggregatedStatusItem("member2", {"readyReplicas": 1}, applied=True),
        AggregatedStatusItem("member3", None, applied=False, applied_message="not yet"),
    ]
    async with _backend(_configuration(example_url, ca.cert_pem)) as backend:
        aggregated = await backend.aggregate_status(workload, items)
    assert aggregated["status"] == {"readyReplicas": 3}
    assert aggregated["spec"] == workload["spec"]
    assert workload["status"] == {"readyReplicas": 0}


async def test_rules_decide_what_the_webhook_handles(
    example_url: str, ca: CertificateAuthority
) -> None:
    async with _backend(_configuration(example_url, ca.cert_pem)) as backend:
        for operation in FOUR_OPERATIONS:
            assert backend.handles(WORKLOAD_GVK, Operation(operation))
        assert not backend.handles(WORKLOAD_GVK, Operation.INTERPRET_HEALTH)
        assert not backend.handles(GVK("apps", "v1", "Deployment"), Operation.INTERPRET_REPLICA)
        assert not backend.handles(GVK("workload.example.io", "v1", "Workload"), Operation.RETAIN)
        with pytest.raises(NotSupported):
            await backend.interpret_health(_workload())
        assert isinstance(backend, Backend)
        backend.load([])
        assert not backend.handles(WORKLOAD_GVK, Operation.INTERPRET_REPLICA)


async def test_example_server_fails_operations_it_does_not_implement(
    example_url: str, ca: CertificateAuthority
) -> None:
    async with _backend(_configuration(example_url, ca.cert_pem, operations=["*"])) as backend:
        with pytest.raises(WebhookRejected) as caught:
            await backend.interpret_health(_workload())
    assert caught.value.code == 400
    assert "wrong request operation type: InterpretHealth" in caught.value.message
    assert "test/workloads.example.com" in str(caught.value)


async def _line_starting(stream: ByteReceiveStream, prefix: bytes) -> str:
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.startswith(prefix):
                return line.decode()
    raise AssertionError(f"the server exited before printing {prefix!r}: {buffer!r}")


async def test_example_server_runs_as_a_program(
    serving_files: tuple[Path, Path], ca: CertificateAuthority
) -> None:
    cert, key = serving_files
    argv = [sys.executable, str(EXAMPLE / "server.py"), "--cert", str(cert), "--key", str(key)]
    argv += ["--host", "127.0.0.1", "--port", "0"]
    async with await anyio.open_process(argv, stderr=subprocess.STDOUT) as process:
        assert process.stdout is not None
        try:
            with anyio.fail_after(30):
                line = await _line_starting(process.stdout, b"serving on ")
            url = line.removeprefix("serving on ")
            async with _backend(_configuration(url, ca.cert_pem)) as backend:
                assert await backend.get_replicas(_workload(replicas=5)) == (5, None)
        finally:
            process.terminate()
            with anyio.fail_after(10):
                returncode = await process.wait()
    assert returncode == 0, "SIGTERM stops the server cleanly"


# -- what goes over the wire, and what may come back ------------------------------------------


def _patch(operations: list[dict[str, Any]]) -> str:
    return base64.b64encode(json.dumps(operations).encode()).decode()


def _context(response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": CONTEXT_API_VERSION, "kind": CONTEXT_KIND, "response": response}


RAW_STATUS = {"readyReplicas": 1}
DEPENDENCY = {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": "settings"}
COMPONENT = {"name": "main", "replicas": 3}
VALID_PATCH = [{"op": "replace", "path": "/spec/replicas", "value": 9}]

# Behaviour (the URL path) -> the answer to a request with this uid.
ANSWERS: dict[str, Callable[[str], web.Response]] = {
    "record": lambda uid: web.json_response(
        _context(
            {
                "uid": uid,
                "successful": True,
                "status": {"code": 200},
                "replicas": 2,
                "healthy": True,
                "rawStatus": RAW_STATUS,
                "dependencies": [DEPENDENCY],
                "components": [COMPONENT],
            }
        )
    ),
    # Karmada's Go webhook library writes the response without apiVersion and kind.
    "karmada-style": lambda uid: web.json_response(
        {"response": {"uid": uid, "successful": True, "status": {"code": 200}, "replicas": 4}}
    ),
    "garbage": lambda uid: web.Response(
        text="<html>502 Bad Gateway</html>", content_type="text/html"
    ),
    "not-an-object": lambda uid: web.json_response([uid]),
    "wrong-uid": lambda uid: web.json_response(
        _context({"uid": str(uuid.uuid4()), "successful": True, "replicas": 1})
    ),
    "wrong-kind": lambda uid: web.json_response(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": uid, "successful": True, "replicas": 1},
        }
    ),
    "no-response": lambda uid: web.json_response(
        {"apiVersion": CONTEXT_API_VERSION, "kind": CONTEXT_KIND}
    ),
    "no-replicas": lambda uid: web.json_response(_context({"uid": uid, "successful": True})),
    "no-successful": lambda uid: web.json_response(_context({"uid": uid, "replicas": 1})),
    "rejected": lambda uid: web.json_response(
        _context(
            {
                "uid": uid,
                "successful": False,
                "status": {"code": 418, "message": "no Workloads on Tuesdays"},
            }
        )
    ),
    "rejected-without-status": lambda uid: web.json_response(
        _context({"uid": uid, "successful": False})
    ),
    # What Karmada's library answers when it cannot decode a request: no uid, a status.
    "undecodable": lambda uid: web.json_response(
        {"response": {"successful": False, "status": {"code": 400, "message": "bad body"}}}
    ),
    "http-500": lambda uid: web.Response(status=500, text="internal error"),
    # Following it would reach /record, which answers successfully.
    "redirect": lambda uid: web.Response(status=307, headers={"Location": "/record"}),
    "patch": lambda uid: web.json_response(
        _context(
            {"uid": uid, "successful": True, "patch": _patch(VALID_PATCH), "patchType": "JSONPatch"}
        )
    ),
    "bad-patch": lambda uid: web.json_response(
        _context(
            {
                "uid": uid,
                "successful": True,
                "patch": _patch([{"op": "remove", "path": "/spec/nothing"}]),
                "patchType": "JSONPatch",
            }
        )
    ),
    "patch-without-type": lambda uid: web.json_response(
        _context({"uid": uid, "successful": True, "patch": _patch(VALID_PATCH)})
    ),
    "strategic-patch": lambda uid: web.json_response(
        _context(
            {"uid": uid, "successful": True, "patch": _patch(VALID_PATCH), "patchType": "Merge"}
        )
    ),
    "patch-not-base64": lambda uid: web.json_response(
        _context({"uid": uid, "successful": True, "patch": "{}!", "patchType": "JSONPatch"})
    ),
}


class FakeWebhook:
    """An HTTPS server answering ``/<behaviour>`` as ANSWERS says; ``/hang`` never answers."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.release = anyio.Event()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{behaviour}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        context = await request.json()
        self.requests.append((dict(request.headers), context))
        behaviour = request.match_info["behaviour"]
        if behaviour == "hang":
            await self.release.wait()
        return ANSWERS.get(behaviour, ANSWERS["record"])(context["request"]["uid"])


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def fake(serving_files: tuple[Path, Path]) -> AsyncIterator[tuple[FakeWebhook, str]]:
    webhook = FakeWebhook()
    try:
        async with _serving(webhook.app(), *serving_files) as base:
            yield webhook, base
    finally:
        webhook.release.set()


async def test_requests_are_resource_interpreter_contexts(
    fake: tuple[FakeWebhook, str], ca: CertificateAuthority
) -> None:
    webhook, base = fake
    workload = _workload()
    items = [AggregatedStatusItem("member1", {"readyReplicas": 2}, applied=True)]
    async with _backend(_configuration(f"{base}/record", ca.cert_pem, operations=["*"])) as backend:
        del webhook.requests[:]
        assert await backend.get_replicas(workload) == (2, None)
        assert await backend.revise_replica(workload, 5) == workload
        assert await backend.retain(workload, _workload(paused=True)) == workload
        assert await backend.aggregate_status(workload, items) == workload
    headers = [h for h, _ in webhook.requests]
    contexts = [c for _, c in webhook.requests]
    assert all(h["Content-Type"] == "application/json" for h in headers)
    assert all(
        c["apiVersion"] == CONTEXT_API_VERSION and c["kind"] == CONTEXT_KIND for c in contexts
    )
    requests = [c["request"] for c in contexts]
    assert [r["operation"] for r in requests] == FOUR_OPERATIONS
    assert len({r["uid"] for r in requests}) == 4, "every call has a fresh uid"
    for request in requests:
        uuid.UUID(request["uid"])
        assert request["kind"] == {
            "group": "workload.example.io",
            "version": "v1alpha1",
            "kind": "Workload",
        }
        assert (request["name"], request["namespace"]) == ("nginx", "default")
        assert request["object"] == workload
    replica, revise, retain, aggregate = requests
    assert not {"replicas", "observedObject", "aggregatedStatus"} & replica.keys()
    assert revise["replicas"] == 5, "Karmada sends the desired replicas as request.replicas"
    assert retain["observedObject"] == _workload(paused=True)
    assert aggregate["aggregatedStatus"] == [
        {"clusterName": "member1", "status": {"readyReplicas": 2}, "applied": True}
    ]


async def test_every_operation_reads_its_response_field(
    fake: tuple[FakeWebhook, str], ca: CertificateAuthority
) -> None:
    _, base = fake
    async with _backend(_configuration(f"{base}/record", ca.cert_pem, operations=["*"])) as backend:
        assert await backend.reflect_status(_workload()) == RAW_STATUS
        assert await backend.interpret_health(_workload()) is True
        assert await backend.get_dependencies(_workload()) == [
            DependentObjectReference("v1", "ConfigMap", "default", "settings")
        ]
        assert await backend.get_components(_workload()) == [Component("main", 3)]


async def test_answers_may_leave_out_api_version_and_kind_like_karmada(
    fake: tuple[FakeWebhook, str], ca: CertificateAuthority
) -> None:
    _, base = fake
    async with _backend(_configuration(f"{base}/karmada-style", ca.cert_pem)) as backend:
        assert await backend.get_replicas(_workload()) == (4, None)


async def test_a_json_patch_is_applied_to_a_copy(
    fake: tuple[FakeWebhook, str], ca: CertificateAuthority
) -> None:
    _, base = fake
    workload = _workload()
    async with _backend(_configuration(f"{base}/patch", ca.cert_pem)) as backend:
        revised = await backend.revise_replica(workload, 9)
    assert revised["spec"]["replicas"] == 9
    assert workload["spec"]["replicas"] == 3


def _replicas(backend: WebhookBackend) -> Awaitable[Any]:
    return backend.get_replicas(_workload())


def _revise(backend: WebhookBackend) -> Awaitable[Any]:
    return backend.revise_replica(_workload(), 2)


@pytest.mark.parametrize(
    ("behaviour", "call", "error", "message"),
    [
        pytest.param("garbage", _replicas, WebhookInvalidResponse, "not JSON", id="garbage"),
        pytest.param(
            "not-an-object", _replicas, WebhookInvalidResponse, "not a JSON object", id="array"
        ),
        pytest.param("wrong-uid", _replicas, WebhookUIDMismatch, "response.uid", id="wrong-uid"),
        pytest.param(
            "wrong-kind", _replicas, WebhookInvalidResponse, "AdmissionReview", id="wrong-kind"
        ),
        pytest.param(
            "no-response", _replicas, WebhookInvalidResponse, "no response", id="no-response"
        ),
        pytest.param(
            "no-replicas",
            _replicas,
            WebhookInvalidResponse,
            "replicas is missing",
            id="no-replicas",
        ),
        pytest.param(
            "no-successful", _replicas, WebhookInvalidResponse, "successful", id="no-successful"
        ),
        pytest.param(
            "rejected", _replicas, WebhookRejected, "(418): no Workloads on Tuesdays", id="rejected"
        ),
        pytest.param(
            "rejected-without-status",
            _replicas,
            WebhookInvalidResponse,
            "status is missing",
            id="rejected-no-status",
        ),
        pytest.param(
            "undecodable", _replicas, WebhookRejected, "(400): bad body", id="undecodable"
        ),
        pytest.param("http-500", _replicas, WebhookHTTPError, "HTTP 500", id="http-500"),
        pytest.param(
            "bad-patch",
            _revise,
            WebhookPatchError,
            "remove /spec/nothing: no member",
            id="bad-patch",
        ),
        pytest.param(
            "patch-without-type",
            _revise,
            WebhookInvalidResponse,
            "patchType is missing",
            id="no-patch-type",
        ),
        pytest.param(
            "strategic-patch", _revise, WebhookInvalidResponse, "'Merge'", id="other-patch-type"
        ),
        pytest.param(
            "patch-not-base64", _revise, WebhookInvalidResponse, "not base64", id="patch-not-base64"
        ),
    ],
)
async def test_bad_answers_raise_clear_errors(
    fake: tuple[FakeWebhook, str],
    ca: CertificateAuthority,
    behaviour: str,
    call: Callable[[WebhookBackend], Awaitable[Any]],
    error: type[WebhookError],
    message: str,
) -> None:
    _, base = fake
    url = f"{base}/{behaviour}"
    async with _backend(_configuration(url, ca.cert_pem)) as backend:
        with pytest.raises(error) as caught:
            await call(backend)
    assert message in str(caught.value)
    assert caught.value.webhook == "test/workloads.example.com"
    assert caught.value.url == url


async def test_a_redirect_is_an_error_and_is_not_followed(
    fake: tuple[FakeWebhook, str], ca: CertificateAuthority
) -> None:
    # The https-only rule covers the configured URL; a redirect could point anywhere else.
    webhook, base = fake
    async with _backend(_configuration(f"{base}/redirect", ca.cert_pem)) as backend:
        del webhook.requests[:]
        with pytest.raises(WebhookHTTPError) as caught:
            await backend.get_replicas(_workload())
    assert caught.value.status == 307
    assert caught.value.webhook == "test/workloads.example.com"
    assert "HTTP 307" in str(caught.value)
    assert "redirects are not followed (Location: /record)" in str(caught.value)
    assert len(webhook.requests) == 1, "only the redirecting URL was called"


async def test_a_hanging_webhook_times_out_after_timeout_seconds(
    fake: tuple[FakeWebhook, str], ca: CertificateAuthority
) -> None:
    _, base = fake
    configuration = _configuration(f"{base}/hang", ca.cert_pem, timeoutSeconds=1)
    async with _backend(configuration) as backend:
        started = anyio.current_time()
        with pytest.raises(WebhookTimeout, match=r"no answer within 1s"):
            await backend.get_replicas(_workload())
        elapsed = anyio.current_time() - started
    assert 0.9 <= elapsed < 3.0, elapsed


async def test_a_webhook_signed_by_another_ca_is_not_trusted(
    fake: tuple[FakeWebhook, str],
) -> None:
    _, base = fake
    stranger = CertificateAuthority("some-other-ca")
    async with _backend(_configuration(f"{base}/record", stranger.cert_pem)) as backend:
        with pytest.raises(WebhookTLSError, match="certificate verify failed"):
            await backend.get_replicas(_workload())


async def test_a_certificate_for_another_host_is_refused(
    ca: CertificateAuthority, tmp_path: Path
) -> None:
    cert, key = ca.issue_serving(["webhook.example.invalid"]).write(tmp_path, "elsewhere")
    async with _serving(SERVER.make_app(), cert, key) as base:
        configuration = _configuration(base + SERVER.PATH, ca.cert_pem)
        async with _backend(configuration) as backend:
            with pytest.raises(WebhookTLSError, match="mismatch"):
                await backend.get_replicas(_workload())


async def test_an_unreachable_webhook_is_a_connection_error(ca: CertificateAuthority) -> None:
    # A bound socket that does not listen: connecting is refused, and no one else gets the port.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"https://127.0.0.1:{closed.getsockname()[1]}/interpreter-workload"
        async with _backend(_configuration(url, ca.cert_pem)) as backend:
            with pytest.raises(WebhookConnectionError, match=r"127\.0\.0\.1"):
                await backend.get_replicas(_workload())


# -- configurations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"clientConfig": {"url": "http://127.0.0.1:1/x"}}, "https", id="plain-http"),
        pytest.param({"clientConfig": {}}, "needs a url or a service", id="no-endpoint"),
        pytest.param(
            {"clientConfig": {"url": "https://127.0.0.1:1/x", "caBundle": "bm90IGEgY2VydA=="}},
            "caBundle",
            id="ca-bundle-not-pem",
        ),
        pytest.param({"interpreterContextVersions": ["v2"]}, "v1alpha1", id="unknown-version"),
        pytest.param({"timeoutSeconds": 31}, "timeoutSeconds", id="timeout-too-long"),
    ],
)
async def test_an_unusable_webhook_still_claims_its_kinds_and_fails_calls(
    change: dict[str, Any], message: str
) -> None:
    configuration = _configuration("https://127.0.0.1:1/x", None)
    configuration["webhooks"][0].update(change)
    async with _backend(configuration) as backend:
        assert backend.handles(WORKLOAD_GVK, Operation.INTERPRET_REPLICA)
        with pytest.raises(InvalidWebhookConfiguration, match=message):
            await backend.get_replicas(_workload())


async def test_a_service_is_called_through_its_cluster_dns_name() -> None:
    configuration = _configuration("unused", None)
    client_config = configuration["webhooks"][0]["clientConfig"]
    client_config["service"] = {"namespace": "karmada-system", "name": "interpreter"}
    (hook,) = webhooks_from(configuration)
    assert hook.url == "https://interpreter.karmada-system.svc:443", "service wins over url"
    client_config["service"].update(port=8443, path="/interpreter-workload")
    (hook,) = webhooks_from(configuration)
    assert hook.url == "https://interpreter.karmada-system.svc:8443/interpreter-workload"
    assert (hook.problem, hook.timeout) == ("", 10.0)


@pytest.mark.parametrize(
    ("names", "chosen"),
    [
        pytest.param(["b", "a"], "a", id="by-configuration-name"),
        # Karmada compares "<configuration>/<webhook>" as one string, and "-" sorts before "/".
        pytest.param(["a", "a-b"], "a-b", id="by-uid-string"),
    ],
)
async def test_the_first_matching_webhook_in_name_order_answers(
    names: list[str], chosen: str
) -> None:
    backend = WebhookBackend([_configuration("https://127.0.0.1:1/x", None, name=n) for n in names])
    hook = backend.webhook_for(WORKLOAD_GVK, Operation.RETAIN)
    assert hook is not None
    assert hook.uid == f"{chosen}/workloads.example.com"


async def test_calls_go_to_the_first_matching_webhook(
    example_url: str, ca: CertificateAuthority
) -> None:
    working = _configuration(example_url, ca.cert_pem, name="a-working")
    broken = _configuration("https://127.0.0.1:1/x", ca.cert_pem, name="b-unreachable")
    async with _backend(broken, working) as backend:
        assert await backend.get_replicas(_workload()) == (3, None)
    working["metadata"]["name"] = "c-working"
    async with _backend(broken, working) as backend:
        with pytest.raises(WebhookConnectionError, match="b-unreachable"):
            await backend.get_replicas(_workload())


# -- the example's manifests on a real apiserver ----------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def karmada_host(host: ControlPlane) -> ControlPlane:
    """The host with the Workload CRD and Karmada's CRDs installed."""
    await host.install_crds([EXAMPLE / "workload-crd.yaml", *crd_paths()])
    return host


def _manifest(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((EXAMPLE / name).read_text())
    return loaded


async def test_the_workload_crd_serves_the_sample_and_its_status(
    karmada_host: ControlPlane, namespace: str, example_url: str, ca: CertificateAuthority
) -> None:
    sample = _manifest("workload.yaml")
    workloads = f"/apis/workload.example.io/v1alpha1/namespaces/{namespace}/workloads"
    created = await karmada_host.request("POST", workloads, sample)
    assert created["spec"] == sample["spec"]
    created["status"] = {"readyReplicas": 2}
    updated = await karmada_host.request("PUT", f"{workloads}/nginx/status", created)
    assert updated["status"] == {"readyReplicas": 2}
    async with _backend(_configuration(example_url, ca.cert_pem)) as backend:
        assert await backend.get_replicas(updated) == (3, None)
        revised = await backend.revise_replica(updated, 2)
    stored = await karmada_host.request("PUT", f"{workloads}/nginx", revised)
    assert stored["spec"]["replicas"] == 2


async def test_the_workload_crd_refuses_a_mistyped_spec(
    karmada_host: ControlPlane, namespace: str
) -> None:
    sample = _manifest("workload.yaml")
    sample["spec"]["replicas"] = "three"
    workloads = f"/apis/workload.example.io/v1alpha1/namespaces/{namespace}/workloads"
    with pytest.raises(RequestError) as caught:
        await karmada_host.request("POST", workloads, sample)
    assert caught.value.status == 422
    assert "spec.replicas" in str(caught.value.body)


async def test_the_example_configuration_and_policy_are_valid_karmada_objects(
    karmada_host: ControlPlane, namespace: str, ca: CertificateAuthority
) -> None:
    text = (EXAMPLE / "webhook-configuration.yaml").read_text()
    text = text.replace("${CA_BUNDLE}", base64.b64encode(ca.cert_pem).decode())
    configuration = yaml.safe_load(text)
    configuration["metadata"]["name"] = f"examples-{namespace}"  # cluster-scoped: one per test
    path = "/apis/config.karmada.io/v1alpha1/resourceinterpreterwebhookconfigurations"
    stored = await karmada_host.request("POST", path, configuration)
    try:
        (hook,) = WebhookBackend([stored]).webhooks
        assert hook.problem == ""
        assert (
            hook.url == "https://workload-interpreter.karmada-system.svc:443/interpreter-workload"
        )
        assert hook.timeout == 3.0
        assert hook.ca_bundle == ca.cert_pem
        for operation in Operation:
            assert hook.matches(WORKLOAD_GVK, operation) == (operation.value in FOUR_OPERATIONS)
    finally:
        await karmada_host.request("DELETE", f"{path}/{configuration['metadata']['name']}")
    policies = f"/apis/policy.karmada.io/v1alpha1/namespaces/{namespace}/propagationpolicies"
    policy = await karmada_host.request("POST", policies, _manifest("propagationpolicy.yaml"))
    weights = policy["spec"]["placement"]["replicaScheduling"]["weightPreference"]
    assert [
        (w["targetCluster"]["clusterNames"], w["weight"]) for w in weights["staticWeightList"]
    ] == [
        (["member1"], 2),
        (["member2"], 1),
    ]
