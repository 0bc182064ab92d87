"""Server is the HTTPS server webhooks are registered on, run by a Manager or on its own.

controller-runtime's ``webhook.Server``: it listens on ``host:port`` (defaults ``:9443``) with the
certificate ``tls.crt``/``tls.key`` from ``cert_dir`` (defaults
``<tmp>/k8s-webhook-server/serving-certs``, where cert-manager's Secret is usually mounted),
re-read when the files change so the next handshake after a rotation serves the new one. Hooks
are registered by path (``register(path, hook)``), before or after start; a hook is an aiohttp
handler, or an admission ``Handler`` (wrapped in an admission ``Webhook``). Every request is
counted in controller-runtime's webhook metrics under its path, and bodies are bounded:
over ``max_request_bytes`` (controller-runtime's 7 MiB: an old and a new object of at most 3 MiB
each, the apiserver's own request bound, plus the review) the answer is HTTP 413 without reading
the rest. An unexpected failure inside a hook is logged and answered 500; admission and
conversion hooks turn their handlers' exceptions into denials and failures themselves.

As a Manager runnable it needs no leadership (standbys answer webhooks too), reports the port it
listens on through ``task_status``, and stops gracefully: it stops listening, lets requests in
flight finish for up to ``shutdown_timeout`` seconds, then closes. ``started_checker()`` is the
readyz check that passes once it listens.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
import orjson
import structlog
from aiohttp import web
from anyio.abc import TaskStatus
from prometheus_client.registry import CollectorRegistry

from reconcile.serving.certificate import DEFAULT_CERT_NAME, DEFAULT_KEY_NAME, ServingCertificate
from reconcile.serving.server import Check
from reconcile.webhook.admission import Handler, Webhook
from reconcile.webhook.metrics import WebhookMetrics

__all__ = [
    "DEFAULT_CERT_DIR",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_WEBHOOK_PORT",
    "Hook",
    "WebhookServer",
    "status_response",
]

log = structlog.get_logger("reconcile.webhook")

DEFAULT_WEBHOOK_PORT: Final = 9443
DEFAULT_CERT_DIR: Final = os.path.join(tempfile.gettempdir(), "k8s-webhook-server", "serving-certs")
DEFAULT_MAX_REQUEST_BYTES: Final = 7 * 1024 * 1024
DEFAULT_SHUTDOWN_TIMEOUT: Final = 10.0

Hook = Callable[[web.Request], Awaitable[web.StreamResponse]]
"""What serves one path: an aiohttp handler (an admission Webhook, a ConversionWebhook, ...)."""


def status_response(code: int, reason: str, message: str) -> web.Response:
    """An HTTP ``code`` answer whose body is a metav1.Status, as the apiserver's own errors."""
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
    body |= {"reason": reason, "message": message}
    return web.Response(status=code, body=orjson.dumps(body), content_type="application/json")


class WebhookServer:
    """An HTTPS server serving webhooks by path. Every option documents its default.

    Args:
        host: the address to listen on. Defaults to "" (every interface).
        port: the port; 0 picks a free one (reported by ``run``). Defaults to 9443.
        cert_dir: directory of the serving certificate and key. Defaults to
            ``<tmp>/k8s-webhook-server/serving-certs``, as controller-runtime.
        cert_name: the certificate's file name. Defaults to "tls.crt".
        key_name: the key's file name. Defaults to "tls.key".
        max_request_bytes: the largest request body served; larger ones get 413. Defaults to
            7 MiB.
        shutdown_timeout: seconds requests in flight may take to finish at stop. Defaults to 10.
        registry: where the webhook metrics go. Defaults to None: the registry of the manager
            that runs it, or none at all when run on its own.
    """

    def __init__(
        self,
        *,
        host: str = "",
        port: int = DEFAULT_WEBHOOK_PORT,
        cert_dir: str | os.PathLike[str] = DEFAULT_CERT_DIR,
        cert_name: str = DEFAULT_CERT_NAME,
        key_name: str = DEFAULT_KEY_NAME,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        registry: CollectorRegistry | None = None,
    ) -> None:
        if max_request_bytes <= 0:
            raise ValueError(f"max_request_bytes must be positive, got {max_request_bytes}")
        self.host = host
        self.port = port
        self.cert_dir = cert_dir
        self.cert_name = cert_name
        self.key_name = key_name
        self.max_request_bytes = max_request_bytes
        self.shutdown_timeout = shutdown_timeout
        self.registry = registry
        self.certificate: ServingCertificate | None = None
        """The certificate being served, once running."""
        self._hooks: dict[str, Hook] = {}
        self._metrics: WebhookMetrics | None = None
        self._listening = False

    def register(self, path: str, hook: Hook | Handler) -> None:
        """Serve ``hook`` at ``path`` (an admission ``Handler`` is wrapped in a ``Webhook``).

        Raises:
            ValueError: ``path`` does not start with "/" or has a hook already.
        """
        if not path.startswith("/"):
            raise ValueError(f"webhook path {path!r} must start with '/'")
        if path in self._hooks:
            raise ValueError(f"webhook path {path} is registered already")
        self._hooks[path] = Webhook(hook) if hasattr(hook, "handle") else hook
        log.info("webhook registered", path=path)

    def hook(self, path: str) -> Hook | None:
        """The hook registered at ``path``, if any."""
        return self._hooks.get(path)

    @property
    def paths(self) -> list[str]:
        """The registered paths, sorted."""
        return sorted(self._hooks)

    def need_leader_election(self) -> bool:
        """Webhooks are answered by every replica, leader or not."""
        return False

    def started_checker(self) -> Check:
        """A readyz check that passes once the server listens (controller-runtime's
        ``StartedChecker``)."""

        async def check() -> str | None:
            return None if self._listening else "webhook server is not listening yet"

        return check

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        hook = self._hooks.get(path)
        if hook is None:
            return status_response(404, "NotFound", f"no webhook at {path}")
        metrics = self._metrics
        if metrics is None:
            return await self._serve(hook, request)
        with metrics.serving(path):
            response = await self._serve(hook, request)
        metrics.answered(path, response.status)
        return response

    async def _serve(self, hook: Hook, request: web.Request) -> web.StreamResponse:
        limit = self.max_request_bytes
        if request.content_length is not None and request.content_length > limit:
            return _too_large(limit)
        try:
            return await hook(request)
        except web.HTTPRequestEntityTooLarge:  # no Content-Length: found while reading
            return _too_large(limit)
        except Exception:
            log.exception("webhook failed", path=request.path)
            return status_response(500, "InternalError", f"webhook {request.path} failed")

    def _application(self) -> web.Application:
        # aiohttp's own bound on request.read() is the one we want (it raises 413 itself).
        app = web.Application(client_max_size=self.max_request_bytes)
        app.router.add_route("POST", "/{path:.*}", self._dispatch)
        return app

    async def run(self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; reports the port it listens on.

        Raises:
            CertificateError: the certificate directory lacks a usable pair.
            OSError: the address cannot be bound.
        """
        certificate = ServingCertificate.from_directory(
            self.cert_dir, cert_name=self.cert_name, key_name=self.key_name
        )
        if self.registry is not None and self._metrics is None:
            self._metrics = WebhookMetrics(self.registry)
        runner = web.AppRunner(
            self._application(), access_log=None, shutdown_timeout=self.shutdown_timeout
        )
        await runner.setup()
        try:
            context = certificate.context
            site = web.TCPSite(runner, self.host or None, self.port, ssl_context=context)
            await site.start()
            addresses = runner.addresses
            self.port = int(addresses[0][1]) if addresses else self.port
            self.certificate = certificate
            async with anyio.create_task_group() as group:
                await group.start(certificate.run)
                self._listening = True
                log.info("webhook server listening", host=self.host, port=self.port)
                task_status.started(self.port)
                await anyio.sleep_forever()
        finally:
            self._listening = False
            with anyio.CancelScope(shield=True):
                await runner.cleanup()
            log.info("webhook server stopped", port=self.port)


def _too_large(limit: int) -> web.Response:
    message = f"request entity is too large; limit is {limit} bytes"
    return status_response(413, "RequestEntityTooLarge", message)
