"""Conversion serves a CRD's conversion webhook: ConversionReview v1, hub and spokes per kind.

controller-runtime's ``pkg/webhook/conversion``. Each kind names one version its ``hub`` (usually
the storage version) and gives every other served version a ``Convertible`` spoke that converts
its objects to the hub and back; any version then converts to any other through the hub, so N
versions need N-1 converters, not N². Objects are dicts: ``convert_to(src, hub)`` fills ``hub``,
a new object of the hub version whose apiVersion, kind and metadata are already set (copied from
``src``), and ``convert_from(hub, dst)`` fills ``dst`` likewise. Converters must not change
metadata other than labels and annotations; the apiserver refuses that.

``ConversionWebhook`` is the HTTP endpoint (served at ``/convert``). A conversion that raises, a
kind without converters or a version it does not know makes the whole review fail with the
message (``result.status: Failure``), which the apiserver reports to the client; a body that is
not a ConversionReview is answered HTTP 400 (a Status), as controller-runtime does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import orjson
import structlog
from aiohttp import web

from reconcile.gvk import GVK
from reconcile.objects import Obj, deep_copy
from reconcile.webhook.server import status_response

__all__ = [
    "CONVERSION_REVIEW_VERSION",
    "ConversionError",
    "ConversionWebhook",
    "Convertible",
    "KindConverter",
]

log = structlog.get_logger("reconcile.webhook")

CONVERSION_REVIEW_VERSION: Final = "apiextensions.k8s.io/v1"
_KIND: Final = "ConversionReview"


class ConversionError(ValueError):
    """An object cannot be converted (unknown kind or version, or a converter refused)."""


class Convertible(Protocol):
    """One spoke version of a kind: converts its objects to the hub version and back."""

    def convert_to(self, src: Obj, hub: Obj) -> None:
        """Fill ``hub`` (hub version, metadata set) from ``src`` (this spoke's version)."""
        ...

    def convert_from(self, hub: Obj, dst: Obj) -> None:
        """Fill ``dst`` (this spoke's version, metadata set) from ``hub``."""
        ...


def _shell(src: Obj, api_version: str) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": src.get("kind"),
        "metadata": deep_copy(src.get("metadata") or {}),
    }


@dataclass(frozen=True)
class KindConverter:
    """The hub version of one kind (group and kind) and a spoke converter per other version."""

    group: str
    kind: str
    hub: str
    spokes: Mapping[str, Convertible] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.hub in self.spokes:
            raise ValueError(f"{self.kind}: the hub version {self.hub} cannot also be a spoke")

    @property
    def versions(self) -> frozenset[str]:
        """Every version this converter handles."""
        return frozenset({self.hub, *self.spokes})

    def _api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    def _spoke(self, version: str) -> Convertible:
        try:
            return self.spokes[version]
        except KeyError:
            known = ", ".join(sorted(self.versions))
            raise ConversionError(
                f"{self.kind}: no converter for version {version!r} (known: {known})"
            ) from None

    def convert(self, obj: Obj, version: str) -> Obj:
        """``obj`` converted to ``version`` of the same group, through the hub.

        Raises:
            ConversionError: an unknown version, or a converter raised (chained).
        """
        source = GVK.of(obj).version
        if source == version:
            same: Obj = deep_copy(obj)
            return same
        try:
            hub = obj
            if source != self.hub:
                hub = _shell(obj, self._api_version(self.hub))
                self._spoke(source).convert_to(obj, hub)
            if version == self.hub:
                return hub
            spoke = self._spoke(version)
            converted = _shell(hub, self._api_version(version))
            spoke.convert_from(hub, converted)
            return converted
        except ConversionError:
            raise
        except Exception as error:
            name = (obj.get("metadata") or {}).get("name", "")
            raise ConversionError(
                f"converting {self.kind} {name!r} from {source} to {version}: "
                f"{type(error).__name__}: {error}"
            ) from error


def _review(uid: str, converted: list[Obj] | None, failure: str | None) -> Obj:
    response: Obj = {"uid": uid}
    if failure is None:
        response["convertedObjects"] = converted or []
        response["result"] = {"status": "Success"}
    else:
        response["convertedObjects"] = []
        response["result"] = {"status": "Failure", "message": failure}
    return {"apiVersion": CONVERSION_REVIEW_VERSION, "kind": _KIND, "response": response}


def _request(review: Any) -> tuple[str, str, list[Any]]:
    if not isinstance(review, Mapping) or review.get("kind") != "ConversionReview":
        raise ConversionError("the body is not a ConversionReview")
    if review.get("apiVersion") != CONVERSION_REVIEW_VERSION:
        raise ConversionError(f"apiVersion must be {CONVERSION_REVIEW_VERSION}")
    request = review.get("request")
    if not isinstance(request, Mapping):
        raise ConversionError("the ConversionReview has no request")
    uid, desired = request.get("uid"), request.get("desiredAPIVersion")
    objects = request.get("objects")
    if not isinstance(uid, str) or not uid or not isinstance(desired, str) or not desired:
        raise ConversionError("request.uid and request.desiredAPIVersion are required")
    if not isinstance(objects, list):
        raise ConversionError("request.objects must be a list")
    return uid, desired, objects


class ConversionWebhook:
    """The ``/convert`` endpoint: converts objects of every kind added to it."""

    def __init__(self) -> None:
        self._kinds: dict[tuple[str, str], KindConverter] = {}

    def add(self, converter: KindConverter) -> None:
        """Serve conversions of ``converter``'s kind.

        Raises:
            ValueError: that kind has converters already.
        """
        key = (converter.group, converter.kind)
        if key in self._kinds:
            raise ValueError(f"conversion of {converter.kind}.{converter.group} is registered")
        self._kinds[key] = converter

    def convert(self, obj: Any, desired_api_version: str) -> Obj:
        """One object converted to ``desired_api_version``.

        Raises:
            ConversionError: not an object of a known kind, or its conversion failed.
        """
        if not isinstance(obj, dict):
            raise ConversionError(f"cannot convert {type(obj).__name__}, want an object")
        try:
            gvk = GVK.of(obj)
        except ValueError as error:
            raise ConversionError(str(error)) from None
        desired = GVK.from_api_version(desired_api_version, gvk.kind)
        if desired.group != gvk.group:
            raise ConversionError(f"cannot convert {gvk} to another group ({desired_api_version})")
        converter = self._kinds.get((gvk.group, gvk.kind))
        if converter is None:
            raise ConversionError(f"no conversion registered for {gvk.kind}.{gvk.group}")
        return converter.convert(obj, desired.version)

    async def __call__(self, http: web.Request) -> web.StreamResponse:
        """Answer one ConversionReview."""
        try:
            uid, desired, objects = _request(orjson.loads(await http.read()))
        except (orjson.JSONDecodeError, ConversionError) as error:
            log.info("bad conversion request", path=http.path, error=str(error))
            return status_response(400, "BadRequest", f"malformed ConversionReview: {error}")
        try:
            converted = [self.convert(obj, desired) for obj in objects]
        except ConversionError as error:
            log.info("conversion failed", uid=uid, error=str(error))
            review = _review(uid, None, str(error))
        else:
            review = _review(uid, converted, None)
        return web.Response(body=orjson.dumps(review), content_type="application/json")
