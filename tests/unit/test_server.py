"""The manager's HTTP server: probe detail for loopback clients only, and HTTPS certificates.

Probes are served with aiohttp's test utilities; a middleware stands in for a client from another
host by rewriting the request's peer address, since the tests themselves can only connect over
loopback. TLS is checked with real handshakes on 127.0.0.1.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import aiohttp
import anyio
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from reconcile.serving.certificate import CertificateError, ServingCertificate
from reconcile.serving.server import Check, HTTPServer, is_loopback
from testenv import eventually
from testenv.certs import CertificateAuthority

asyncio_test = pytest.mark.asyncio(loop_scope="session")

SECRET_REASON = "cannot reach https://10.0.0.7:6443 as user admin: connection refused"


async def _healthy() -> str | None:
    return None


async def _failing() -> str | None:
    return SECRET_REASON


def _peer(remote: str) -> Callable[..., Awaitable[web.StreamResponse]]:
    @web.middleware
    async def rewrite(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        return await handler(request.clone(remote=remote))

    return rewrite


async def _get(checks: dict[str, Check], path: str, remote: str | None) -> tuple[int, str]:
    server = HTTPServer("0", healthz=checks, readyz=checks)
    if remote is not None:
        server.app.middlewares.append(_peer(remote))
    async with TestClient(TestServer(server.app, host="127.0.0.1")) as client:
        response = await client.get(path)
        return response.status, await response.text()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.5.0.1", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("::ffff:10.0.0.5", False),
        ("metrics.example.com", False),
        (None, False),
    ],
)
def test_is_loopback(host: str | None, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@asyncio_test
@pytest.mark.parametrize("path", ["/readyz", "/readyz?verbose", "/healthz?verbose"])
async def test_a_remote_client_sees_which_check_failed_but_not_why(path: str) -> None:
    status, text = await _get({"ping": _healthy, "caches": _failing}, path, "10.1.2.3")
    assert status == 500
    assert SECRET_REASON not in text
    assert "[+]ping ok" in text
    assert "[-]caches failed: reason withheld" in text


@asyncio_test
@pytest.mark.parametrize("remote", [None, "::1"], ids=["127.0.0.1", "::1"])
async def test_a_loopback_client_sees_the_reason(remote: str | None) -> None:
    status, text = await _get({"ping": _healthy, "caches": _failing}, "/readyz?verbose", remote)
    assert status == 500
    assert f"[-]caches failed: {SECRET_REASON}" in text


@asyncio_test
async def test_passing_probes_answer_ok_to_anyone() -> None:
    assert await _get({"ping": _healthy}, "/healthz", "10.1.2.3") == (200, "ok")
    assert await _get({"ping": _healthy}, "/healthz?verbose", "10.1.2.3") == (
        200,
        "[+]ping ok\nok\n",
    )


@asyncio_test
async def test_a_raising_check_fails_the_probe_without_leaking_the_exception() -> None:
    async def broken() -> str | None:
        raise RuntimeError("token=abc at /etc/secret")

    status, text = await _get({"broken": broken}, "/readyz", "192.0.2.1")
    assert status == 500
    assert "abc" not in text
    assert "[-]broken failed: reason withheld" in text


async def _serve_tls(certificate: ServingCertificate, trusted: bytes) -> int:
    """The status of GET /metrics over HTTPS trusting ``trusted``; raises the client's error."""
    registry = CollectorRegistry()
    server = HTTPServer("127.0.0.1:0", registry=registry, certificate=certificate)
    context = ssl.create_default_context(cadata=trusted.decode())
    failure: aiohttp.ClientError | None = None
    status = 0
    async with anyio.create_task_group() as group:
        port = await group.start(server.run)
        async with aiohttp.ClientSession() as http:
            try:
                async with http.get(f"https://127.0.0.1:{port}/metrics", ssl=context) as response:
                    status = response.status
            except aiohttp.ClientError as error:
                failure = error
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return status


@asyncio_test
async def test_a_self_signed_certificate_serves_https_for_localhost() -> None:
    certificate = ServingCertificate.self_signed()
    assert await _serve_tls(certificate, certificate.cert_pem) == 200


@asyncio_test
async def test_plain_http_to_an_https_address_gets_no_metrics() -> None:
    server = HTTPServer(
        "127.0.0.1:0", registry=CollectorRegistry(), certificate=ServingCertificate.self_signed()
    )
    async with anyio.create_task_group() as group:
        port = await group.start(server.run)
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.ClientError):
                async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
                    await response.read()
        group.cancel_scope.cancel()


def _write_pair(directory: Path, ca: CertificateAuthority, names: tuple[str, str]) -> None:
    pair = ca.issue_serving(["127.0.0.1", "localhost"])
    (directory / names[0]).write_bytes(pair.cert_pem)
    (directory / names[1]).write_bytes(pair.key_pem)


@asyncio_test
async def test_a_certificate_directory_is_served_and_reloaded_when_rotated(tmp_path: Path) -> None:
    first, second = CertificateAuthority("first-ca"), CertificateAuthority("second-ca")
    _write_pair(tmp_path, first, ("serving.crt", "serving.key"))
    certificate = ServingCertificate.from_directory(
        tmp_path, cert_name="serving.crt", key_name="serving.key"
    )
    assert await _serve_tls(certificate, first.cert_pem) == 200
    async with anyio.create_task_group() as group:
        await group.start(partial(certificate.run, interval=0.05))
        old = certificate.cert_pem
        _write_pair(tmp_path, second, ("serving.crt", "serving.key"))
        stamp = os.stat(tmp_path / "serving.crt").st_mtime + 5  # coarse file-system clocks
        for name in ("serving.crt", "serving.key"):
            os.utime(tmp_path / name, (stamp, stamp))
        await eventually(lambda: _value(certificate.cert_pem != old), timeout=5)
        group.cancel_scope.cancel()
    assert await _serve_tls(certificate, second.cert_pem) == 200
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await _serve_tls(certificate, first.cert_pem)


async def _value(value: bool) -> bool:
    return value


@asyncio_test
async def test_a_broken_rotation_keeps_the_previous_certificate(tmp_path: Path) -> None:
    ca = CertificateAuthority("ca")
    _write_pair(tmp_path, ca, ("tls.crt", "tls.key"))
    certificate = ServingCertificate.from_directory(tmp_path)
    other = CertificateAuthority("other").issue_serving(["127.0.0.1"])
    (tmp_path / "tls.key").write_bytes(other.key_pem)  # a key that does not match the cert
    stamp = os.stat(tmp_path / "tls.crt").st_mtime + 5
    os.utime(tmp_path / "tls.key", (stamp, stamp))
    with anyio.move_on_after(0.3):
        await certificate.run(interval=0.05)
    assert await _serve_tls(certificate, ca.cert_pem) == 200


@pytest.mark.parametrize(
    ("files", "message"),
    [
        pytest.param((), r"tls\.crt: no such file", id="empty directory"),
        pytest.param(("tls.crt",), r"tls\.key: no such file", id="no key"),
    ],
)
def test_an_unusable_certificate_directory_is_a_clear_error(
    tmp_path: Path, files: tuple[str, ...], message: str
) -> None:
    pair = CertificateAuthority("ca").issue_serving(["127.0.0.1"])
    for name in files:
        (tmp_path / name).write_bytes(pair.cert_pem)
    with pytest.raises(CertificateError, match=message):
        ServingCertificate.from_directory(tmp_path)


def test_a_mismatched_pair_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_bytes(CertificateAuthority("a").issue_serving(["x"]).cert_pem)
    (tmp_path / "tls.key").write_bytes(CertificateAuthority("b").issue_serving(["x"]).key_pem)
    with pytest.raises(CertificateError, match=r"tls\.crt"):
        ServingCertificate.from_directory(tmp_path)
