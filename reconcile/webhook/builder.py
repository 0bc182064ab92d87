"""Builder registers a kind's webhooks on a Manager's webhook server at controller-runtime's paths.

``webhook_managed_by(mgr).for_(gvk).with_defaulter(d).with_validator(v).complete()`` records and
validates at ``complete``: it needs ``for_`` and at least one of a defaulter, a validator or a
conversion. The defaulter is served at ``/mutate-<group with dots as dashes>-<version>-<kind in
lowercase>``, the validator at ``/validate-...`` (so ``/mutate--v1-pod`` for the core group, as
kubebuilder's markers expect), and ``with_conversion(spokes)`` adds the kind to the server's one
``/convert`` endpoint with ``for_``'s version as the hub. Every method returns the builder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from reconcile.gvk import GVK
from reconcile.webhook.conversion import ConversionWebhook, Convertible, KindConverter
from reconcile.webhook.defaulter import CustomDefaulter, DefaulterHandler
from reconcile.webhook.validator import CustomValidator, ValidatorHandler

if TYPE_CHECKING:
    from reconcile.manager import Manager

__all__ = [
    "CONVERT_PATH",
    "WebhookBuilder",
    "WebhookBuilderError",
    "mutate_path",
    "validate_path",
    "webhook_managed_by",
]

CONVERT_PATH: Final = "/convert"


class WebhookBuilderError(ValueError):
    """The builder was used wrongly; the message says how to fix it."""


def _suffix(gvk: GVK[Any]) -> str:
    return f"{gvk.group.replace('.', '-')}-{gvk.version}-{gvk.kind.lower()}"


def mutate_path(gvk: GVK[Any]) -> str:
    """Where the defaulting webhook of ``gvk`` is served (controller-runtime's path)."""
    return f"/mutate-{_suffix(gvk)}"


def validate_path(gvk: GVK[Any]) -> str:
    """Where the validating webhook of ``gvk`` is served (controller-runtime's path)."""
    return f"/validate-{_suffix(gvk)}"


def webhook_managed_by(manager: Manager) -> WebhookBuilder:
    """Start building webhooks that ``manager``'s webhook server will serve."""
    return WebhookBuilder(manager)


class WebhookBuilder:
    """Records one kind's webhooks; ``complete()`` validates and registers them."""

    def __init__(self, manager: Manager) -> None:
        self._manager = manager
        self._gvk: GVK | None = None
        self._defaulter: CustomDefaulter | None = None
        self._validator: CustomValidator | None = None
        self._spokes: Mapping[str, Convertible] | None = None

    def for_(self, gvk: GVK[Any]) -> WebhookBuilder:
        """The kind (and version) the webhooks serve."""
        if self._gvk is not None:
            raise WebhookBuilderError(f"for_ was called already (with {self._gvk})")
        self._gvk = gvk
        return self

    def with_defaulter(self, defaulter: CustomDefaulter) -> WebhookBuilder:
        """Default objects of the kind with ``defaulter`` (a mutating webhook)."""
        self._defaulter = defaulter
        return self

    def with_validator(self, validator: CustomValidator) -> WebhookBuilder:
        """Validate objects of the kind with ``validator`` (a validating webhook)."""
        self._validator = validator
        return self

    def with_conversion(self, spokes: Mapping[str, Convertible]) -> WebhookBuilder:
        """Convert between ``for_``'s version (the hub) and each spoke version, at /convert."""
        self._spokes = dict(spokes)
        return self

    def complete(self) -> None:
        """Register the webhooks on the manager's webhook server.

        Raises:
            WebhookBuilderError: no ``for_``, nothing to serve, or a path taken already.
        """
        gvk = self._gvk
        if gvk is None:
            raise WebhookBuilderError("for_(gvk) is required: which kind do the webhooks serve?")
        if self._defaulter is None and self._validator is None and self._spokes is None:
            raise WebhookBuilderError(
                f"{gvk}: give with_defaulter, with_validator or with_conversion"
            )
        server = self._manager.webhook_server
        try:
            if self._defaulter is not None:
                server.register(mutate_path(gvk), DefaulterHandler(gvk, self._defaulter))
            if self._validator is not None:
                server.register(validate_path(gvk), ValidatorHandler(gvk, self._validator))
            if self._spokes is not None:
                converter = KindConverter(gvk.group, gvk.kind, gvk.version, self._spokes)
                hook = server.hook(CONVERT_PATH)
                if hook is None:
                    hook = ConversionWebhook()
                    server.register(CONVERT_PATH, hook)
                if not isinstance(hook, ConversionWebhook):
                    raise WebhookBuilderError(f"{CONVERT_PATH} serves something else already")
                hook.add(converter)
        except WebhookBuilderError:
            raise
        except ValueError as error:
            raise WebhookBuilderError(str(error)) from error
