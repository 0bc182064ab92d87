"""Serving is a manager's HTTP endpoint: the server with /metrics, /healthz and /readyz, its serving
certificate, and the authentication and authorization guarding /metrics
(controller-runtime's pkg/metrics/server and pkg/metrics/filters).
"""

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
from reconcile.serving.certificate import (
    DEFAULT_CERT_NAME,
    DEFAULT_KEY_NAME,
    CertificateError,
    ServingCertificate,
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
