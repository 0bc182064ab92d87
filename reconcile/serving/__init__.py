"""Serving is a manager's HTTP endpoint: the server with /metrics, /healthz and /readyz, its serving
certificate, and the authentication and authorization guarding /metrics
(controller-runtime's pkg/metrics/server and pkg/metrics/filters).
"""

import importlib
from typing import TYPE_CHECKING, Any

from reconcile.serving.certificate import (
    DEFAULT_CERT_NAME,
    DEFAULT_KEY_NAME,
    CertificateError,
    ServingCertificate,
)

if TYPE_CHECKING:
    from reconcile.serving.auth import (
        DEFAULT_ALLOW_CACHE_TTL,
        DEFAULT_DENY_CACHE_TTL,
        DEFAULT_TOKEN_CACHE_TTL,
        Filter,
        FilterProvider,
        HTTPHandler,
        ReviewClient,
        ReviewSlots,
        ReviewsOverloaded,
        SubjectAccessReviewAuthorizer,
        TokenReviewAuthenticator,
        UserInfo,
        bearer_token,
        with_authentication_and_authorization,
    )
    from reconcile.serving.server import (
        Check,
        HTTPServer,
        is_loopback,
        parse_bind_address,
    )

__all__ = [
    "CertificateError",
    "Check",
    "DEFAULT_ALLOW_CACHE_TTL",
    "DEFAULT_CERT_NAME",
    "DEFAULT_DENY_CACHE_TTL",
    "DEFAULT_KEY_NAME",
    "DEFAULT_TOKEN_CACHE_TTL",
    "Filter",
    "FilterProvider",
    "HTTPHandler",
    "HTTPServer",
    "ReviewClient",
    "ReviewSlots",
    "ReviewsOverloaded",
    "ServingCertificate",
    "SubjectAccessReviewAuthorizer",
    "TokenReviewAuthenticator",
    "UserInfo",
    "bearer_token",
    "is_loopback",
    "parse_bind_address",
    "with_authentication_and_authorization",
]

# The server and the filters need aiohttp.web (2 MiB): imported when one of their names is first
# used, so a process that imports the framework, or runs a manager with its servers off, does not
# carry it. The certificate is light and imported at once (ManagerOptions' defaults name it).
_LAZY_MODULES = ("reconcile.serving.auth", "reconcile.serving.server")


def __getattr__(name: str) -> Any:
    for module_name in _LAZY_MODULES:
        module = importlib.import_module(module_name)
        if name in module.__all__:
            value = getattr(module, name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
