"""Server serves a manager's HTTP endpoints: /metrics, and the /healthz and /readyz probes.

Checks are named functions returning None when fine and raising (or returning a message) when not;
a probe answers 200 ``ok`` when every check passes and 500 otherwise, listing each check as
controller-runtime's healthz handlers do (``[+]name ok``, ``[-]name failed``; ``?verbose`` lists
them when all pass too). A failing check's reason goes only to clients on the loopback interface
(``kubectl exec``, a sidecar); anyone else — the kubelet included — reads ``reason withheld``, as in
Kubernetes' own healthz, since check errors can name hosts, users and internals.

/metrics may be wrapped in a ``Filter`` (e.g. authentication and authorization) and served over
TLS. Bind addresses follow controller-runtime: ``host:port``, ``:port`` for all interfaces, ``0``
to disable; port 0 picks a free port, reported through ``task_status`` for tests.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

import anyio
import structlog
from aiohttp import web
from anyio.abc import TaskStatus
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from reconcile.serving.auth import Filter
from reconcile.serving.certificate import ServingCertificate

__all__ = ["Check", "HTTPServer", "is_loopback", "parse_bind_address"]

log = structlog.get_logger("reconcile.serving.server")

Check = Callable[[], Awaitable[str | None]]
"""A probe check: returns None when healthy, or a reason (or raises) when not."""

DISABLED: Final = ("", "0")
WITHHELD: Final = "reason withheld"


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``host:port`` or ``:port`` → (host, port); ``0`` or empty → None (disabled).

    Raises:
        ValueError: not an address.
    """
    if address in DISABLED:
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"invalid bind address {address!r} (want host:port, :port or 0)")
    return host.strip("[]") or "0.0.0.0", int(port)  # ":port" means every interface, as in Go


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (an address or ``localhost``) is on the loopback interface only.

    An IPv4 address mapped into IPv6 (``::ffff:127.0.0.1``) counts as its IPv4 self; any other
    name, and None (an unknown peer), does not count.
    """
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


async def _run_checks(checks: Mapping[str, Check]) -> dict[str, str | None]:
    results: dict[str, str | None] = {}
    for name, check in checks.items():
        try:
            results[name] = await check()
        except Exception as error:  # a failing check is a failed probe, never a crashed server
            results[name] = f"{type(error).__name__}: {error}"
    return results


def _probe(checks: Mapping[str, Check]) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        results = await _run_checks(checks)
        failed = {name: reason for name, reason in results.items() if reason}
        if not failed and "verbose" not in request.query:
            return web.Response(text="ok")
        local = is_loopback(request.remote)
        lines = []
        for name in results:
            if name not in failed:
                lines.append(f"[+]{name} ok")
                continue
            lines.append(f"[-]{name} failed: {failed[name] if local else WITHHELD}")
            log.debug("probe check failed", path=request.path, check=name, reason=failed[name])
        lines.append(f"{request.path.strip('/')} check failed" if failed else "ok")
        return web.Response(status=500 if failed else 200, text="\n".join(lines) + "\n")

    return handle


class HTTPServer:
    """One listening address serving any of /metrics, /healthz, /readyz.

    ``metrics_filter`` wraps the /metrics handler (the probes stay open: the kubelet calls them
    without credentials); ``certificate`` makes the address serve HTTPS only.
    """

    def __init__(
        self,
        address: str,
        *,
        registry: CollectorRegistry | None = None,
        healthz: Mapping[str, Check] | None = None,
        readyz: Mapping[str, Check] | None = None,
        metrics_filter: Filter | None = None,
        certificate: ServingCertificate | None = None,
    ) -> None:
        self.address = address
        self.port: int | None = None
        self.certificate = certificate
        app = web.Application()
        if registry is not None:

            async def metrics(_request: web.Request) -> web.StreamResponse:
                body = generate_latest(registry)
                return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

            app.router.add_get("/metrics", metrics_filter(metrics) if metrics_filter else metrics)
        if healthz is not None:
            app.router.add_get("/healthz", _probe(healthz))
        if readyz is not None:
            app.router.add_get("/readyz", _probe(readyz))
        self._app = app

    @property
    def app(self) -> web.Application:
        """The aiohttp application (to serve it in tests, or to add routes before ``run``)."""
        return self._app

    async def run(self, *, task_status: TaskStatus[int | None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; reports the bound port (None when disabled)."""
        bind = parse_bind_address(self.address)
        if bind is None:
            task_status.started(None)
            return
        runner = web.AppRunner(self._app, access_log=None)
        await runner.setup()
        try:
            context = self.certificate.context if self.certificate else None
            site = web.TCPSite(runner, bind[0], bind[1], ssl_context=context)
            await site.start()
            addresses = runner.addresses
            self.port = int(addresses[0][1]) if addresses else bind[1]
            async with anyio.create_task_group() as group:
                if self.certificate is not None:
                    await group.start(self.certificate.run)
                task_status.started(self.port)
                await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await runner.cleanup()
