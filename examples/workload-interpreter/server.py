"""Server is an example resource interpreter webhook: it teaches Karmada the Workload kind.

Workload (workload.example.io/v1alpha1, see workload-crd.yaml) is a Deployment look-alike Karmada
knows nothing about. This HTTPS server answers Karmada's ResourceInterpreterContext requests for
it, like Karmada's Go example (examples/customresourceinterpreter):

- InterpretReplica: the replicas are ``spec.replicas`` (1 when unset, as the field documents).
- ReviseReplica: set ``spec.replicas`` to the replicas the scheduler gave a member cluster.
- Retain: keep ``spec.paused`` from the object observed in the member cluster, where its own
  controller may pause the workload; Karmada would otherwise overwrite it with the template.
- AggregateStatus: ``status.readyReplicas`` is the sum over the member clusters.

Changes come back as a JSON Patch (RFC 6902, base64 in ``response.patch``) computed by diffing the
object sent with the wanted one; no change means no patch. Like Karmada's webhook library the HTTP
status is always 200: failures are ``successful: false`` with ``status.code`` and
``status.message``, and a request that cannot be decoded is answered without a uid.

Run: ``python server.py --cert tls.crt --key tls.key --port 8443``; it prints
``serving on https://HOST:PORT/PATH`` once it listens (``--port 0`` picks a free port).
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import signal
import ssl
from typing import Any, Final

import anyio
from aiohttp import web

__all__ = ["PATH", "handle_context", "interpret", "make_app", "serve", "server_tls"]

PATH: Final = "/interpreter-workload"
API_VERSION: Final = "config.karmada.io/v1alpha1"
KIND: Final = "ResourceInterpreterContext"
WORKLOAD: Final = {"group": "workload.example.io", "kind": "Workload"}

log = logging.getLogger("workload-interpreter")
Obj = dict[str, Any]


class Failed(Exception):
    """The request cannot be answered; ``code`` is the HTTP-like status code to report."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        super().__init__(message)


def _diff(old: Any, new: Any, path: str = "") -> list[Obj]:
    """A JSON Patch turning ``old`` into ``new``: objects key by key, anything else replaced."""
    if isinstance(old, dict) and isinstance(new, dict):
        patch: list[Obj] = []
        for key in [*old, *(key for key in new if key not in old)]:
            child = f"{path}/{key.replace('~', '~0').replace('/', '~1')}"
            if key not in new:
                patch.append({"op": "remove", "path": child})
            elif key not in old:
                patch.append({"op": "add", "path": child, "value": new[key]})
            else:
                patch += _diff(old[key], new[key], child)
        return patch
    return (
        []
        if old == new and type(old) is type(new)
        else [{"op": "replace", "path": path, "value": new}]
    )


def _patched(original: Obj, wanted: Obj) -> Obj:
    patch = _diff(original, wanted)
    if not patch:
        return {"successful": True}
    encoded = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"successful": True, "patch": encoded, "patchType": "JSONPatch"}


def _spec(obj: Obj) -> Obj:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        raise Failed(400, "spec must be an object")
    return spec


def _replicas(workload: Obj) -> Obj:
    replicas = _spec(workload).get("replicas", 1)
    return {"successful": True, "replicas": replicas}


def _revise(workload: Obj, request: Obj) -> Obj:
    desired = request.get("replicas")
    if isinstance(desired, bool) or not isinstance(desired, int):
        raise Failed(400, "ReviseReplica needs the desired replicas in request.replicas")
    wanted = json.loads(json.dumps(workload))
    _spec(wanted)["replicas"] = desired
    return _patched(workload, wanted)


def _retain(workload: Obj, request: Obj) -> Obj:
    observed = request.get("observedObject")
    if not isinstance(observed, dict):
        raise Failed(400, "Retain needs request.observedObject")
    wanted = json.loads(json.dumps(workload))
    # Go's `paused,omitempty`: false is the same as absent, so absent stays absent.
    if _spec(observed).get("paused"):
        _spec(wanted)["paused"] = True
    else:
        _spec(wanted).pop("paused", None)
    return _patched(workload, wanted)


def _aggregate(workload: Obj, request: Obj) -> Obj:
    ready = 0
    for item in request.get("aggregatedStatus") or []:
        status = item.get("status") if isinstance(item, dict) else None
        if isinstance(status, dict) and isinstance(status.get("readyReplicas"), int):
            ready += status["readyReplicas"]
    wanted = json.loads(json.dumps(workload))
    status = wanted.setdefault("status", {})
    if not isinstance(status, dict):
        raise Failed(400, "status must be an object")
    status["readyReplicas"] = ready
    return _patched(workload, wanted)


def interpret(request: Obj) -> Obj:
    """The ``response`` (without uid and status) for one ResourceInterpreterRequest.

    Raises:
        Failed: the request is not for a Workload, lacks what its operation needs, or asks an
            operation this webhook does not implement (400).
    """
    kind = request.get("kind") or {}
    if {key: kind.get(key) for key in WORKLOAD} != WORKLOAD:
        raise Failed(400, f"this webhook interprets Workloads, not {kind!r}")
    workload = request.get("object")
    if not isinstance(workload, dict):
        raise Failed(400, "request.object must be a Workload")
    operation = request.get("operation")
    log.info("%s for Workload %s/%s", operation, request.get("namespace"), request.get("name"))
    if operation == "InterpretReplica":
        return _replicas(workload)
    if operation == "ReviseReplica":
        return _revise(workload, request)
    if operation == "Retain":
        return _retain(workload, request)
    if operation == "AggregateStatus":
        return _aggregate(workload, request)
    raise Failed(400, f"wrong request operation type: {operation}")


def handle_context(body: bytes, content_type: str) -> Obj:
    """The ResourceInterpreterContext answering the request ``body``; never raises."""
    try:
        if content_type != "application/json":
            raise Failed(400, f"contentType={content_type}, expected application/json")
        try:
            context = json.loads(body)
            request = context["request"]
            uid = request["uid"]
        except (ValueError, TypeError, KeyError) as error:
            raise Failed(400, f"unable to decode the request: {error!r}") from error
    except Failed as error:
        response: Obj = {"successful": False, "status": {"code": error.code, "message": str(error)}}
        return {"apiVersion": API_VERSION, "kind": KIND, "response": response}
    try:
        response = interpret(request)
        response.setdefault("status", {"code": 200})
    except Failed as error:
        response = {"successful": False, "status": {"code": error.code, "message": str(error)}}
    return {"apiVersion": API_VERSION, "kind": KIND, "response": {"uid": uid, **response}}


async def _handle(http_request: web.Request) -> web.Response:
    body = await http_request.read()
    return web.json_response(handle_context(body, http_request.content_type))


def make_app(path: str = PATH) -> web.Application:
    """The aiohttp application answering POSTs at ``path``."""
    app = web.Application(client_max_size=16 * 2**20)
    app.router.add_post(path, _handle)
    return app


def server_tls(cert: str, key: str) -> ssl.SSLContext:
    """A TLS server context serving the PEM certificate chain ``cert`` with private key ``key``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def serve(cert: str, key: str, host: str, port: int, path: str) -> None:
    """Serve until SIGINT or SIGTERM; prints ``serving on <url>`` once listening."""
    runner = web.AppRunner(make_app(path))
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, ssl_context=server_tls(cert, key))
        await site.start()
        bound_port = runner.addresses[0][1]
        print(f"serving on https://{host}:{bound_port}{path}", flush=True)
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                break
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description="Resource interpreter webhook for Workloads.")
    parser.add_argument("--cert", required=True, help="PEM serving certificate (chain)")
    parser.add_argument("--key", required=True, help="PEM private key of the certificate")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on")
    parser.add_argument("--port", type=int, default=8443, help="port (0: pick a free one)")
    parser.add_argument("--path", default=PATH, help="URL path of the webhook")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    anyio.run(serve, args.cert, args.key, args.host, args.port, args.path)


if __name__ == "__main__":
    main()
