"""Gen holds the generators behind ``reconcile gen``: code and manifests made from an apiserver's
or a project's declarations, committed and re-runnable (controller-gen's role).

``types`` writes the TypedDict modules of ``reconcile.api`` from the kube-apiserver's OpenAPI v3.
"""

from reconcile.gen.openapi import GROUP_VERSIONS, OpenAPIError, fetch_openapi
from reconcile.gen.types import SchemaError, generate_types, render_types, write_types

__all__ = [
    "GROUP_VERSIONS",
    "OpenAPIError",
    "SchemaError",
    "fetch_openapi",
    "generate_types",
    "render_types",
    "write_types",
]
