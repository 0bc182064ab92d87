"""Webhook is the interpreter source that asks the HTTPS webhooks users configure for their kinds.

A ``WebhookBackend`` holds the webhooks of the ResourceInterpreterWebhookConfiguration objects
(config.karmada.io/v1alpha1) it was given (``load`` replaces them). For a kind and operation the
first webhook with a matching rule answers; like Karmada, webhooks are ordered by the string
``<configuration name>/<webhook name>``, and a rule matches when its operations, apiGroups,
apiVersions and kinds each list the value or ``*``.

A call POSTs a ResourceInterpreterContext whose ``request`` holds a fresh uid, the object's kind
(group, version, kind), name, namespace, the operation and the object, plus ``observedObject``
(Retain), ``replicas`` (the desired replicas of ReviseReplica; Karmada's JSON name) or
``aggregatedStatus`` (AggregateStatus). The answer is checked as Karmada does: HTTP 200, a JSON
ResourceInterpreterContext (apiVersion and kind may be absent: Karmada's own webhook library
leaves them out), ``response.uid`` equal to the request's, ``successful`` true (otherwise
``status.code`` and ``status.message`` are reported), and the field the operation needs:
``replicas`` (+ ``replicaRequirements``), ``healthy``, ``rawStatus``, ``dependencies``,
``components``, or for ReviseReplica, Retain and AggregateStatus a base64 RFC 6902 ``patch`` with
``patchType: JSONPatch`` applied to a copy of the object (no patch at all means "unchanged").

Transport: HTTPS only, the certificate chain and the host name are always verified, and redirects
are never followed (a 3xx answer is a ``WebhookHTTPError``: the https-only rule and the caBundle
are about the configured URL, not wherever a Location points). With a ``caBundle`` (base64 PEM)
that bundle is the only trust root; without one the system's roots are used, as Kubernetes does.
A ``service`` client config (which wins over ``url``, as in Karmada) is called at
``https://<name>.<namespace>.svc:<port><path>`` (port 443 by default): that needs cluster DNS,
i.e. a controller running in the cluster that has the Service, and a serving certificate naming
``<name>.<namespace>.svc``. (Karmada first looks the Service up in its own apiserver and calls its
cluster IP; this client does not.) Every call, connecting included, is bounded by the webhook's
``timeoutSeconds`` (default 10, Karmada's).

A webhook whose configuration cannot be used (no https URL, a caBundle without a PEM certificate,
no ``v1alpha1`` in ``interpreterContextVersions``, a timeout outside 1..30) still matches its
rules, so its kinds never fall through to another source silently: calling it raises
``InvalidWebhookConfiguration``. Errors::

    InterpreterError
    └── WebhookError                    a call to one webhook failed; .webhook, .url, .detail
        ├── InvalidWebhookConfiguration the webhook's configuration cannot be used
        ├── WebhookConnectionError      refused, unresolvable, reset or closed before answering
        ├── WebhookTLSError             the certificate is not from caBundle or not for the host
        ├── WebhookTimeout              no complete answer within timeoutSeconds
        ├── WebhookHTTPError            an HTTP status other than 200; .status
        ├── WebhookInvalidResponse      the body is not a valid answer to this request
        │   └── WebhookUIDMismatch      response.uid is not the request's uid
        ├── WebhookRejected             response.successful is false; .code, .message
        └── WebhookPatchError           the returned JSON Patch does not apply to the object
"""

from __future__ import annotations

import base64
import binascii
import functools
import ssl
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

import aiohttp
import anyio
import orjson

from controllers.interpreter.types import (
    AggregatedStatusItem,
    Component,
    DependentObjectReference,
    InterpreterError,
    NotSupported,
    Operation,
    ReplicaRequirements,
)
from reconcile import GVK, JsonPatchError, apply_json_patch
from reconcile.jsonpatch import MAX_COPY_BYTES, MAX_OPERATIONS

__all__ = [
    "CONTEXT_API_VERSION",
    "CONTEXT_KIND",
    "CONTEXT_VERSION",
    "DEFAULT_TIMEOUT",
    "InterpreterWebhook",
    "InvalidWebhookConfiguration",
    "WebhookBackend",
    "WebhookConnectionError",
    "WebhookError",
    "WebhookHTTPError",
    "WebhookInvalidResponse",
    "WebhookPatchError",
    "WebhookRejected",
    "WebhookRule",
    "WebhookTLSError",
    "WebhookTimeout",
    "WebhookUIDMismatch",
    "webhooks_from",
]

CONTEXT_VERSION: Final = "v1alpha1"
"""The only ResourceInterpreterContext version this client speaks (Karmada's only one)."""

CONTEXT_API_VERSION: Final = "config.karmada.io/v1alpha1"
CONTEXT_KIND: Final = "ResourceInterpreterContext"

DEFAULT_TIMEOUT: Final = 10.0
"""Seconds a call may take when the webhook sets no timeoutSeconds (Karmada's default)."""

JSON_PATCH: Final = "JSONPatch"
_MAX_TIMEOUT: Final = 30
_MAX_RESPONSE_BYTES: Final = 16 * 2**20
_INT32_MAX: Final = 2**31 - 1
_HEADERS: Final = {"Content-Type": "application/json", "Accept": "application/json"}

T = TypeVar("T")
Obj = dict[str, Any]


class WebhookError(InterpreterError):
    """A call to an interpreter webhook failed; ``webhook`` is ``<configuration>/<name>``."""

    def __init__(self, webhook: str, url: str, detail: str) -> None:
        self.webhook = webhook
        self.url = url
        self.detail = detail
        where = f"{webhook} ({url})" if url else webhook
        super().__init__(f"interpreter webhook {where}: {detail}")


class InvalidWebhookConfiguration(WebhookError):
    """The webhook's clientConfig, timeoutSeconds or interpreterContextVersions cannot be used."""


class WebhookConnectionError(WebhookError):
    """The webhook could not be reached, or the connection broke before the answer was read."""


class WebhookTLSError(WebhookError):
    """TLS failed: the certificate does not chain to the caBundle or does not name the host."""


class WebhookTimeout(WebhookError):
    """The webhook did not answer completely within its timeoutSeconds."""


class WebhookHTTPError(WebhookError):
    """The webhook answered with an HTTP status other than 200; ``status`` is it."""

    def __init__(self, webhook: str, url: str, status: int, body: str) -> None:
        self.status = status
        super().__init__(webhook, url, f"HTTP {status} (want 200): {body}")


class WebhookInvalidResponse(WebhookError):
    """The body is not a ResourceInterpreterContext answering this request and operation."""


class WebhookUIDMismatch(WebhookInvalidResponse):
    """``response.uid`` is not the uid of the request (a stale or misrouted answer)."""


class WebhookRejected(WebhookError):
    """The webhook answered ``successful: false``; ``code`` and ``message`` are its status."""

    def __init__(self, webhook: str, url: str, code: int, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(webhook, url, f"the webhook failed the request ({code}): {message}")


class WebhookPatchError(WebhookError):
    """The JSON Patch the webhook returned does not apply to the object sent."""


# -- configuration ----------------------------------------------------------------------------


def _listed(value: str, items: tuple[str, ...]) -> bool:
    return "*" in items or value in items


def _strings(value: Any) -> tuple[str, ...]:
    # The CRD guarantees lists of strings; anything else matches nothing rather than everything.
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))


@dataclass(frozen=True, slots=True)
class WebhookRule:
    """Operations on kinds a webhook answers; each list matches its value exactly or by ``*``."""

    operations: tuple[str, ...]
    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    kinds: tuple[str, ...]

    def matches(self, gvk: GVK, operation: Operation) -> bool:
        """Whether the rule covers ``operation`` on objects of kind ``gvk``."""
        return (
            _listed(operation.value, self.operations)
            and _listed(gvk.group, self.api_groups)
            and _listed(gvk.version, self.api_versions)
            and _listed(gvk.kind, self.kinds)
        )

    @classmethod
    def from_dict(cls, data: Any) -> WebhookRule:
        """Parse a RuleWithOperations; missing or mistyped lists match nothing."""
        data = data if isinstance(data, Mapping) else {}
        return cls(
            operations=_strings(data.get("operations")),
            api_groups=_strings(data.get("apiGroups")),
            api_versions=_strings(data.get("apiVersions")),
            kinds=_strings(data.get("kinds")),
        )


@dataclass(frozen=True, slots=True)
class InterpreterWebhook:
    """One webhook of a configuration: where to call it, what it answers, why it cannot be called.

    ``problem`` is empty when the webhook can be called; otherwise calls raise
    ``InvalidWebhookConfiguration`` with it. ``ca_bundle`` is the PEM trust root (None: the
    system's roots).
    """

    configuration: str
    name: str
    url: str
    rules: tuple[WebhookRule, ...]
    timeout: float = DEFAULT_TIMEOUT
    ca_bundle: bytes | None = field(default=None, repr=False)
    problem: str = ""

    @property
    def uid(self) -> str:
        """``<configuration>/<name>``: Karmada's identity of a webhook, and its ordering key."""
        return f"{self.configuration}/{self.name}"

    def matches(self, gvk: GVK, operation: Operation) -> bool:
        """Whether one of the webhook's rules covers ``operation`` on kind ``gvk``."""
        return any(rule.matches(gvk, operation) for rule in self.rules)


def _trust(ca_bundle: bytes | None) -> ssl.SSLContext:
    """A client TLS context trusting only ``ca_bundle`` (or the system roots when None).

    Raises:
        ssl.SSLError: the bundle holds no usable PEM certificate.
    """
    if ca_bundle is None:
        return ssl.create_default_context()
    # With cadata given, create_default_context loads no system roots: the bundle is all we trust.
    return ssl.create_default_context(cadata=ca_bundle.decode("ascii"))


def _ca_bundle(value: Any) -> bytes | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("clientConfig.caBundle must be a base64 string")
    try:
        pem = base64.b64decode(value, validate=True)
        _trust(pem)
    except (binascii.Error, UnicodeDecodeError, ssl.SSLError) as error:
        message = f"clientConfig.caBundle is not a base64 PEM certificate bundle: {error}"
        raise ValueError(message) from error
    return pem


def _service_url(service: Any) -> str:
    if not isinstance(service, Mapping):
        raise ValueError("clientConfig.service must be an object")
    namespace, name = service.get("namespace"), service.get("name")
    port, path = service.get("port", 443), service.get("path") or ""
    if not (isinstance(namespace, str) and namespace and isinstance(name, str) and name):
        raise ValueError("clientConfig.service needs a namespace and a name")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"clientConfig.service.port must be 1..65535, got {port!r}")
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise ValueError(f"clientConfig.service.path must start with '/', got {path!r}")
    return f"https://{name}.{namespace}.svc:{port}{path}"


def _checked_url(url: Any) -> str:
    if not isinstance(url, str) or not url:
        raise ValueError("clientConfig needs a url or a service")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port validates it
    except ValueError as error:
        raise ValueError(f"clientConfig.url {url!r} is not a URL: {error}") from error
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"clientConfig.url must be https://host[:port][/path], got {url!r}")
    if parts.username is not None or parts.query or parts.fragment:
        raise ValueError("clientConfig.url must not carry user info, a query or a fragment")
    return url


def _endpoint(client_config: Any) -> tuple[str, bytes | None]:
    if not isinstance(client_config, Mapping):
        raise ValueError("the webhook has no clientConfig")
    service = client_config.get("service")
    url = _checked_url(client_config.get("url")) if service is None else _service_url(service)
    return url, _ca_bundle(client_config.get("caBundle"))


def _timeout(value: Any) -> float:
    if value is None:
        return DEFAULT_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_TIMEOUT:
        raise ValueError(f"timeoutSeconds must be 1..{_MAX_TIMEOUT}, got {value!r}")
    return float(value)


def _check_versions(value: Any) -> None:
    if CONTEXT_VERSION not in _strings(value):
        raise ValueError(
            f"interpreterContextVersions {value!r} lists no version this client speaks "
            f"({CONTEXT_VERSION})"
        )


def _webhook(configuration: str, hook: Mapping[str, Any]) -> InterpreterWebhook:
    rules = hook.get("rules")
    url, ca_bundle, timeout, problem = "", None, DEFAULT_TIMEOUT, ""
    try:
        url, ca_bundle = _endpoint(hook.get("clientConfig"))
        timeout = _timeout(hook.get("timeoutSeconds"))
        _check_versions(hook.get("interpreterContextVersions"))
    except ValueError as error:
        problem = str(error)
    return InterpreterWebhook(
        configuration=configuration,
        name=str(hook.get("name") or ""),
        url=url,
        rules=tuple(WebhookRule.from_dict(r) for r in (rules if isinstance(rules, list) else [])),
        timeout=timeout,
        ca_bundle=ca_bundle,
        problem=problem,
    )


def webhooks_from(configuration: Mapping[str, Any]) -> list[InterpreterWebhook]:
    """The webhooks of one ResourceInterpreterWebhookConfiguration, in their listed order.

    Never raises: a webhook that cannot be called carries the reason in ``problem``.
    """
    metadata = configuration.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    hooks = configuration.get("webhooks")
    return [
        _webhook(str(name or ""), hook)
        for hook in (hooks if isinstance(hooks, list) else [])
        if isinstance(hook, Mapping)
    ]


# -- the request and the answer ---------------------------------------------------------------


def _context(uid: str, gvk: GVK, operation: Operation, obj: Obj, extra: Obj) -> Obj:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    request: Obj = {
        "uid": uid,
        "kind": {"group": gvk.group, "version": gvk.version, "kind": gvk.kind},
        "name": str(metadata.get("name") or ""),
        "operation": operation.value,
        "object": obj,
        **extra,
    }
    if metadata.get("namespace"):
        request["namespace"] = metadata["namespace"]
    return {"apiVersion": CONTEXT_API_VERSION, "kind": CONTEXT_KIND, "request": request}


def _preview(raw: bytes) -> str:
    text = raw[:200].decode("utf-8", errors="replace")
    return repr(text) + ("…" if len(raw) > 200 else "")


def _rejected(hook: InterpreterWebhook, status: Mapping[str, Any]) -> WebhookRejected:
    code, message = status.get("code"), status.get("message")
    return WebhookRejected(
        hook.uid,
        hook.url,
        code if isinstance(code, int) and not isinstance(code, bool) else 0,
        message if isinstance(message, str) and message else "(no message)",
    )


def _verified(hook: InterpreterWebhook, uid: str, raw: bytes) -> Mapping[str, Any]:
    """The ``response`` of a successful answer to request ``uid``.

    Raises:
        WebhookInvalidResponse: not JSON, not a ResourceInterpreterContext, fields missing.
        WebhookUIDMismatch: the answer is to another request.
        WebhookRejected: the webhook answered ``successful: false``.
    """
    invalid = functools.partial(WebhookInvalidResponse, hook.uid, hook.url)
    try:
        answer = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise invalid(f"the body is not JSON ({error}): {_preview(raw)}") from error
    if not isinstance(answer, dict):
        raise invalid(f"the body is not a JSON object: {_preview(raw)}")
    api_version = answer.get("apiVersion") or CONTEXT_API_VERSION
    kind = answer.get("kind") or CONTEXT_KIND
    if (api_version, kind) != (CONTEXT_API_VERSION, CONTEXT_KIND):
        want = f"{CONTEXT_API_VERSION} {CONTEXT_KIND}"
        raise invalid(f"the body is {api_version} {kind}, not {want}")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise invalid("the ResourceInterpreterContext has no response object")
    successful, status = response.get("successful"), response.get("status")
    if response.get("uid") != uid:
        # Karmada's webhook library answers a request it cannot decode without a uid; its status
        # message says why, which helps more than "uid mismatch".
        if successful is False and not response.get("uid") and isinstance(status, Mapping):
            raise _rejected(hook, status)
        detail = f"response.uid is {response.get('uid')!r}, sent {uid!r}"
        raise WebhookUIDMismatch(hook.uid, hook.url, detail)
    if not isinstance(successful, bool):
        raise invalid("response.successful is missing or not a boolean")
    if not successful:
        if not isinstance(status, Mapping):
            raise invalid("response.successful is false but response.status is missing")
        raise _rejected(hook, status)
    return response


# -- per-operation parsing of a successful response (ValueError: the response is invalid) -----


def _replicas(response: Mapping[str, Any]) -> tuple[int, ReplicaRequirements | None]:
    replicas = response.get("replicas")
    if replicas is None:
        raise ValueError("response.replicas is missing (InterpretReplica needs it)")
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise ValueError(f"response.replicas must be an integer, got {replicas!r}")
    if not 0 <= replicas <= _INT32_MAX:
        raise ValueError(f"response.replicas must be a non-negative int32, got {replicas}")
    requirements = response.get("replicaRequirements")
    return replicas, None if requirements is None else ReplicaRequirements.from_dict(requirements)


def _healthy(response: Mapping[str, Any]) -> bool:
    healthy = response.get("healthy")
    if not isinstance(healthy, bool):
        raise ValueError("response.healthy is missing or not a boolean (InterpretHealth needs it)")
    return healthy


def _raw_status(response: Mapping[str, Any]) -> Obj:
    status = response.get("rawStatus")
    if not isinstance(status, dict):
        raise ValueError(
            "response.rawStatus is missing or not an object (InterpretStatus needs it)"
        )
    return status


def _items(response: Mapping[str, Any], key: str) -> list[Any]:
    items = response.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValueError(f"response.{key} must be a list")
    return items


def _dependencies(response: Mapping[str, Any]) -> list[DependentObjectReference]:
    return [DependentObjectReference.from_dict(d) for d in _items(response, "dependencies")]


def _components(response: Mapping[str, Any]) -> list[Component]:
    return [Component.from_dict(c) for c in _items(response, "components")]


def _patch_operations(response: Mapping[str, Any]) -> list[Any]:
    patch, patch_type = response.get("patch"), response.get("patchType")
    if not patch and patch_type is None:
        return []  # Karmada: neither patch nor patchType means the object is unchanged
    if patch_type is None:
        raise ValueError("response.patch is set but response.patchType is missing")
    if patch_type != JSON_PATCH:
        raise ValueError(f"response.patchType must be {JSON_PATCH!r}, got {patch_type!r}")
    if not patch or not isinstance(patch, str):
        raise ValueError("response.patchType is set but response.patch is empty or not a string")
    try:
        operations = orjson.loads(base64.b64decode(patch, validate=True))
    except ValueError as error:
        raise ValueError(f"response.patch is not base64-encoded JSON: {error}") from error
    if not isinstance(operations, list):
        raise ValueError("response.patch must be a JSON array of operations")
    return operations


def _patched(obj: Obj, response: Mapping[str, Any]) -> Obj:
    return _apply_patch(obj, _patch_operations(response))


def _apply_patch(obj: Obj, operations: list[Any]) -> Obj:
    """A copy of ``obj`` with RFC 6902 ``operations`` applied. Raises: JsonPatchError."""
    # kube-apiserver's bounds on a patch (copies, operations): the answer is someone else's.
    patched = apply_json_patch(
        obj, operations, max_copy_bytes=MAX_COPY_BYTES, max_operations=MAX_OPERATIONS
    )
    if not isinstance(patched, dict):
        raise JsonPatchError("the patched object is not a JSON object")
    return patched


# -- the backend ------------------------------------------------------------------------------


class WebhookBackend:
    """Answers interpreter operations by calling the configured webhooks (see module docstring).

    Holds one HTTP connection pool, opened on the first call: close it with ``aclose()`` or use
    the backend as an async context manager.
    """

    def __init__(self, configurations: Iterable[Mapping[str, Any]] = ()) -> None:
        self._webhooks: tuple[InterpreterWebhook, ...] = ()
        self._chosen: dict[tuple[GVK, Operation], InterpreterWebhook | None] = {}
        self._contexts: dict[bytes | None, ssl.SSLContext] = {}
        self._session: aiohttp.ClientSession | None = None
        self.load(configurations)

    @property
    def webhooks(self) -> tuple[InterpreterWebhook, ...]:
        """All webhooks, in the order they are asked (``<configuration>/<name>``)."""
        return self._webhooks

    def load(self, configurations: Iterable[Mapping[str, Any]]) -> None:
        """Replace the webhooks with those of ``configurations`` (all of them, not a delta)."""
        hooks = [hook for config in configurations for hook in webhooks_from(config)]
        self._webhooks = tuple(sorted(hooks, key=lambda hook: hook.uid))
        self._chosen = {}
        # A TLS context per trust root in use: those of replaced webhooks go with them.
        kept = {hook.ca_bundle for hook in self._webhooks}
        self._contexts = {ca: ctx for ca, ctx in self._contexts.items() if ca in kept}

    def webhook_for(self, gvk: GVK, operation: Operation) -> InterpreterWebhook | None:
        """The webhook that answers ``operation`` for ``gvk``, None if none does."""
        key = (gvk, operation)
        if key not in self._chosen:
            matching = (hook for hook in self._webhooks if hook.matches(gvk, operation))
            self._chosen[key] = next(matching, None)
        return self._chosen[key]

    def handles(self, gvk: GVK, operation: Operation) -> bool:
        """Whether a webhook has a rule for ``operation`` on ``gvk``."""
        return self.webhook_for(gvk, operation) is not None

    async def aclose(self) -> None:
        """Close the connection pool and drop the TLS contexts; a later call opens new ones."""
        self._contexts.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> WebhookBackend:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    # Operations. Each raises NotSupported when no webhook matches, InvalidWebhookConfiguration
    # when the matching one cannot be called, and the WebhookError of the failed call otherwise.

    async def get_replicas(self, obj: Obj) -> tuple[int, ReplicaRequirements | None]:
        """InterpretReplica: ``response.replicas`` and ``replicaRequirements``.

        Raises:
            NotSupported, WebhookError (any subclass).
        """
        return await self._ask(Operation.INTERPRET_REPLICA, obj, _replicas)

    async def revise_replica(self, obj: Obj, replicas: int) -> Obj:
        """ReviseReplica: a copy of ``obj`` patched by the webhook to ``replicas``.

        Raises:
            NotSupported, WebhookPatchError, WebhookError (any subclass).
        """
        parse = functools.partial(_patched, obj)
        return await self._ask(Operation.REVISE_REPLICA, obj, parse, replicas=replicas)

    async def retain(self, desired: Obj, observed: Obj) -> Obj:
        """Retain: a copy of ``desired`` patched by the webhook, which sees ``observed``.

        Raises:
            NotSupported, WebhookPatchError, WebhookError (any subclass).
        """
        parse = functools.partial(_patched, desired)
        return await self._ask(Operation.RETAIN, desired, parse, observedObject=observed)

    async def aggregate_status(self, obj: Obj, items: Sequence[AggregatedStatusItem]) -> Obj:
        """AggregateStatus: a copy of ``obj`` patched by the webhook from the members' statuses.

        Raises:
            NotSupported, WebhookPatchError, WebhookError (any subclass).
        """
        parse = functools.partial(_patched, obj)
        statuses = [item.to_dict() for item in items]
        return await self._ask(Operation.AGGREGATE_STATUS, obj, parse, aggregatedStatus=statuses)

    async def reflect_status(self, obj: Obj) -> Obj | None:
        """InterpretStatus: ``response.rawStatus``.

        Raises:
            NotSupported, WebhookError (any subclass).
        """
        return await self._ask(Operation.INTERPRET_STATUS, obj, _raw_status)

    async def interpret_health(self, obj: Obj) -> bool:
        """InterpretHealth: ``response.healthy``.

        Raises:
            NotSupported, WebhookError (any subclass).
        """
        return await self._ask(Operation.INTERPRET_HEALTH, obj, _healthy)

    async def get_dependencies(self, obj: Obj) -> list[DependentObjectReference]:
        """InterpretDependency: ``response.dependencies``, each with a name or a selector.

        Raises:
            NotSupported, WebhookError (any subclass).
        """
        return await self._ask(Operation.INTERPRET_DEPENDENCY, obj, _dependencies)

    async def get_components(self, obj: Obj) -> list[Component]:
        """InterpretComponent: ``response.components``.

        Raises:
            NotSupported, WebhookError (any subclass).
        """
        return await self._ask(Operation.INTERPRET_COMPONENT, obj, _components)

    # Plumbing.

    async def _ask(
        self,
        operation: Operation,
        obj: Obj,
        parse: Callable[[Mapping[str, Any]], T],
        **extra: Any,
    ) -> T:
        try:
            gvk = GVK.of(obj)
        except ValueError as error:
            message = f"cannot interpret an object without apiVersion/kind: {error}"
            raise InterpreterError(message) from error
        hook = self.webhook_for(gvk, operation)
        if hook is None:
            raise NotSupported(gvk, operation)
        if hook.problem:
            raise InvalidWebhookConfiguration(hook.uid, hook.url, hook.problem)
        uid = str(uuid.uuid4())
        raw = await self._post(hook, orjson.dumps(_context(uid, gvk, operation, obj, extra)))
        response = _verified(hook, uid, raw)
        try:
            return parse(response)
        except JsonPatchError as error:
            raise WebhookPatchError(hook.uid, hook.url, str(error)) from error
        except ValueError as error:
            raise WebhookInvalidResponse(hook.uid, hook.url, str(error)) from error

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # No aiohttp timeout: each call runs under its webhook's own deadline (anyio).
            timeout = aiohttp.ClientTimeout(total=None)
            self._session = aiohttp.ClientSession(timeout=timeout)
        return self._session

    def _ssl_for(self, hook: InterpreterWebhook) -> ssl.SSLContext:
        if hook.ca_bundle not in self._contexts:
            self._contexts[hook.ca_bundle] = _trust(hook.ca_bundle)
        return self._contexts[hook.ca_bundle]

    async def _post(self, hook: InterpreterWebhook, body: bytes) -> bytes:
        """POST ``body``; the raw answer of an HTTP 200.

        Raises:
            WebhookTimeout, WebhookTLSError, WebhookConnectionError, WebhookHTTPError,
            WebhookInvalidResponse (the body is too large).
        """
        args = (hook.uid, hook.url)
        try:
            with anyio.fail_after(hook.timeout):
                # No redirects: the https-only rule covers the configured URL, not a Location.
                async with self._client().post(
                    hook.url,
                    data=body,
                    headers=_HEADERS,
                    ssl=self._ssl_for(hook),
                    allow_redirects=False,
                ) as response:
                    status, raw = response.status, await _read(hook, response)
                    location = response.headers.get("Location", "")
        except TimeoutError as error:
            raise WebhookTimeout(*args, f"no answer within {hook.timeout:g}s") from error
        except aiohttp.ClientConnectorCertificateError as error:
            raise WebhookTLSError(*args, _tls_detail(hook, error.certificate_error)) from error
        except (aiohttp.ClientSSLError, ssl.SSLError) as error:
            raise WebhookTLSError(*args, _tls_detail(hook, error)) from error
        except aiohttp.ClientConnectorError as error:
            detail = f"cannot connect to {error.host}:{error.port}: {error.os_error}"
            raise WebhookConnectionError(*args, detail) from error
        except aiohttp.ClientError as error:
            raise WebhookConnectionError(*args, f"{type(error).__name__}: {error}") from error
        if 300 <= status < 400:
            detail = f"redirects are not followed (Location: {location[:200]})"
            raise WebhookHTTPError(hook.uid, hook.url, status, detail)
        if status != 200:
            raise WebhookHTTPError(hook.uid, hook.url, status, _preview(raw))
        return raw


def _tls_detail(hook: InterpreterWebhook, error: BaseException) -> str:
    roots = "the caBundle" if hook.ca_bundle is not None else "the system's roots"
    host = urlsplit(hook.url).hostname
    return f"TLS failed (the certificate must chain to {roots} and name {host}): {error}"


async def _read(hook: InterpreterWebhook, response: aiohttp.ClientResponse) -> bytes:
    body = bytearray()
    async for chunk in response.content.iter_chunked(2**16):
        body += chunk
        if len(body) > _MAX_RESPONSE_BYTES:
            limit = f"{_MAX_RESPONSE_BYTES // 2**20} MiB"
            raise WebhookInvalidResponse(hook.uid, hook.url, f"the answer is larger than {limit}")
    return bytes(body)
