"""Webhook serves admission and conversion webhooks for the apiserver, like controller-runtime's
pkg/webhook.

One concept per module: ``server`` (the HTTPS WebhookServer a Manager runs, hooks by path,
certificate reloaded on rotation, bounded bodies, metrics), ``admission`` (AdmissionReview v1, the
raw ``Handler`` model: allowed/denied/patched), ``defaulter`` and ``validator`` (the typed model:
``CustomDefaulter``, ``CustomValidator``), ``conversion`` (ConversionReview v1, hub and spokes),
``builder`` (``webhook_managed_by(mgr).for_(gvk).with_defaulter(d).with_validator(v).complete()``
at controller-runtime's paths) and ``metrics`` (controller-runtime's webhook metric names).
See docs/webhooks.md.
"""

from reconcile.webhook.admission import (
    ADMISSION_REVIEW_VERSION,
    CONNECT,
    CREATE,
    DELETE,
    UPDATE,
    AdmissionError,
    AdmissionRequest,
    AdmissionResponse,
    Handler,
    HandlerFunc,
    ReviewError,
    Webhook,
    allowed,
    as_handler,
    current_request,
    denied,
    errored,
    patched,
    response_for_error,
)
from reconcile.webhook.builder import (
    CONVERT_PATH,
    WebhookBuilder,
    WebhookBuilderError,
    mutate_path,
    validate_path,
    webhook_managed_by,
)
from reconcile.webhook.conversion import (
    CONVERSION_REVIEW_VERSION,
    ConversionError,
    ConversionWebhook,
    Convertible,
    KindConverter,
)
from reconcile.webhook.defaulter import CustomDefaulter, DefaulterHandler, check_kind
from reconcile.webhook.metrics import WebhookMetrics
from reconcile.webhook.server import (
    DEFAULT_CERT_DIR,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_WEBHOOK_PORT,
    Hook,
    WebhookServer,
    status_response,
)
from reconcile.webhook.validator import CustomValidator, ValidatorHandler

__all__ = [
    "ADMISSION_REVIEW_VERSION",
    "AdmissionError",
    "AdmissionRequest",
    "AdmissionResponse",
    "CONNECT",
    "CONVERSION_REVIEW_VERSION",
    "CONVERT_PATH",
    "CREATE",
    "ConversionError",
    "ConversionWebhook",
    "Convertible",
    "CustomDefaulter",
    "CustomValidator",
    "DEFAULT_CERT_DIR",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_WEBHOOK_PORT",
    "DELETE",
    "DefaulterHandler",
    "Handler",
    "HandlerFunc",
    "Hook",
    "KindConverter",
    "ReviewError",
    "UPDATE",
    "ValidatorHandler",
    "Webhook",
    "WebhookBuilder",
    "WebhookBuilderError",
    "WebhookMetrics",
    "WebhookServer",
    "allowed",
    "as_handler",
    "check_kind",
    "current_request",
    "denied",
    "errored",
    "mutate_path",
    "patched",
    "response_for_error",
    "status_response",
    "validate_path",
    "webhook_managed_by",
]
