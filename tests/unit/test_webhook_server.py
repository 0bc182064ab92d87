"""The webhook server over real TLS on 127.0.0.1: bad and huge bodies, a raising handler, a
rotated certificate, metrics per path and readiness. The apiserver side is in
tests/integration/test_webhooks.py."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import anyio.streams.tls
import orjson
import pytest
from prometheus_client import CollectorRegistry

from reconcile.webhook import AdmissionRequest, AdmissionResponse, WebhookServer
from testenv.certs import CertificateAuthority
from tests.unit.test_webhook_admission import review, widget

asyncio_test = pytest.mark.asyncio(loop_scope="session")


class Explodes:
    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        raise KeyError("spec.size")


def write_pair(directory: Path, ca: CertificateAuthority) -> bytes:
    pair = ca.issue_serving(["127.0.0.1"])
    (directory / "tls.crt").write_bytes(pair.cert_pem)
    (directory / "tls.key").write_bytes(pair.key_pem)
    return pair.cert_pem


@asynccontextmanager
async def serving(server: WebhookServer) -> AsyncIterator[int]:
    async with anyio.create_task_group() as group:
        port = await group.start(server.run)
        yield port
        group.cancel_scope.cancel()


async def post(port: int, ca: CertificateAuthority, body: bytes, path: str = "/hook") -> Any:
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    headers = {"Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"https://127.0.0.1:{port}{path}", data=body, headers=headers, ssl=context) as r,
    ):
        return r.status, await r.json(content_type=None)


@asyncio_test
async def test_the_server_survives_bad_huge_and_raising_requests(tmp_path: Path) -> None:
    ca = CertificateAuthority("webhook-ca")
    write_pair(tmp_path, ca)
    registry = CollectorRegistry()
    server = WebhookServer(
        host="127.0.0.1", port=0, cert_dir=tmp_path, max_request_bytes=64 * 1024, registry=registry
    )
    server.register("/hook", Explodes())
    ready = server.started_checker()
    assert await ready() is not None
    async with serving(server) as port:
        assert await ready() is None
        status, body = await post(port, ca, b"{not json")
        assert status == 400
        assert body["response"]["status"]["code"] == 400
        assert "malformed AdmissionReview" in body["response"]["status"]["message"]
        status, body = await post(port, ca, b" " * (65 * 1024))
        assert (status, body["reason"]) == (413, "RequestEntityTooLarge")
        status, body = await post(port, ca, orjson.dumps(review(obj=widget())))
        assert status == 200
        answer = body["response"]
        assert (answer["uid"], answer["allowed"], answer["status"]["code"]) == ("0f0e", False, 403)
        assert answer["status"]["message"] == "'spec.size'"
        status, _ = await post(port, ca, b"{}", path="/nowhere")
        assert status == 404
    for code, count in (("400", 1), ("413", 1), ("200", 1)):
        labels = {"webhook": "/hook", "code": code}
        assert (
            registry.get_sample_value("controller_runtime_webhook_requests_total", labels) == count
        )
    assert (
        registry.get_sample_value(
            "controller_runtime_webhook_latency_seconds_count", {"webhook": "/hook"}
        )
        == 3
    )
    gauge = "controller_runtime_webhook_requests_in_flight"
    assert registry.get_sample_value(gauge, {"webhook": "/hook"}) == 0
    assert await ready() is not None  # stopped: no longer ready


async def served_certificate(port: int) -> bytes:
    """The certificate a fresh TLS handshake with 127.0.0.1:port gets (DER)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    stream = await anyio.connect_tcp("127.0.0.1", port, tls=True, ssl_context=context)
    async with stream:
        der = stream.extra(anyio.streams.tls.TLSAttribute.peer_certificate_binary)
    assert der is not None
    return der


@asyncio_test
async def test_the_next_handshake_after_a_rotation_serves_the_new_certificate(
    tmp_path: Path,
) -> None:
    first, second = CertificateAuthority("first"), CertificateAuthority("second")
    write_pair(tmp_path, first)
    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=tmp_path)
    server.register("/hook", Explodes())
    async with serving(server) as port:
        before = await served_certificate(port)
        new_pem = write_pair(tmp_path, second)
        after = await served_certificate(port)  # no poll interval waited for
        assert after != before
        assert ssl.DER_cert_to_PEM_cert(after).strip() == new_pem.decode().strip()
        status, _ = await post(port, second, b"{}")
        assert status == 400
        (tmp_path / "tls.key").write_bytes(b"half-written")  # a broken update keeps the last pair
        assert await served_certificate(port) == after


def test_a_path_is_registered_once() -> None:
    server = WebhookServer()
    server.register("/hook", Explodes())
    with pytest.raises(ValueError, match="registered already"):
        server.register("/hook", Explodes())
    with pytest.raises(ValueError, match="must start with '/'"):
        server.register("hook", Explodes())
