"""Server serves a manager's HTTP endpoints: /metrics, and the /healthz and /readyz probes.

Checks are named functions returning None when fine and raising (or returning a message) when not;
a probe answers 200 ``ok`` when every check passes and 500 with each failing check's reason
otherwise, like controller-runtime's healthz handlers (``/readyz?verbose`` lists every check).
Bind addresses follow controller-runtime: ``host:port``, ``:port`` for all interfaces, ``0`` to
disable; port 0 picks a free port, reported through ``task_status`` for tests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Final

import anyio
from aiohttp import web
from anyio.abc import TaskStatus
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

__all__ = ["Check", "HTTPServer", "parse_bind_address"]

Check = Callable[[], Awaitable[str | None]]
"""A probe check: returns None when healthy, or a reason (or raises) when not."""

DISABLED: Final = ("", "0")


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
    return host or "0.0.0.0", int(port)  # ":port" means every interface, as in Go


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
        lines = [f"[{'-' if n in failed else '+'}]{n} {failed.get(n) or 'ok'}" for n in results]
        lines.append("check failed" if failed else "ok")
        return web.Response(status=500 if failed else 200, text="\n".join(lines) + "\n")

    return handle


class HTTPServer:
    """One listening address serving any of /metrics, /healthz, /readyz."""

    def __init__(
        self,
        address: str,
        *,
        registry: CollectorRegistry | None = None,
        healthz: Mapping[str, Check] | None = None,
        readyz: Mapping[str, Check] | None = None,
    ) -> None:
        self.address = address
        self.port: int | None = None
        app = web.Application()
        if registry is not None:

            async def metrics(_request: web.Request) -> web.Response:
                body = generate_latest(registry)
                return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

            app.router.add_get("/metrics", metrics)
        if healthz is not None:
            app.router.add_get("/healthz", _probe(healthz))
        if readyz is not None:
            app.router.add_get("/readyz", _probe(readyz))
        self._app = app

    async def run(self, *, task_status: TaskStatus[int | None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; reports the bound port (None when disabled)."""
        bind = parse_bind_address(self.address)
        if bind is None:
            task_status.started(None)
            return
        runner = web.AppRunner(self._app, access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, bind[0], bind[1])
            await site.start()
            addresses = runner.addresses
            self.port = int(addresses[0][1]) if addresses else bind[1]
            task_status.started(self.port)
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await runner.cleanup()
