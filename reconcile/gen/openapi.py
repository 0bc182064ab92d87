"""Openapi fetches an apiserver's OpenAPI v3 documents, one per group version, as
``/openapi/v3`` indexes them (the discovery the kubectl explain and client generators use)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import orjson

from reconcile.client import Client

__all__ = ["GROUP_VERSIONS", "OpenAPIError", "fetch_openapi"]

GROUP_VERSIONS: Final = (
    "api/v1",
    "apis/apps/v1",
    "apis/batch/v1",
    "apis/networking.k8s.io/v1",
    "apis/rbac.authorization.k8s.io/v1",
    "apis/coordination.k8s.io/v1",
    "apis/policy/v1",
    "apis/autoscaling/v2",
    "apis/autoscaling/v1",
    "apis/apiextensions.k8s.io/v1",
)
"""The group versions whose kinds ``reconcile gen types`` writes, as ``/openapi/v3`` names them;
the types they reference (meta/v1 and others) come along."""


class OpenAPIError(Exception):
    """The apiserver did not serve an OpenAPI v3 document that was asked for."""


async def fetch_openapi(
    client: Client, group_versions: Iterable[str] = GROUP_VERSIONS
) -> dict[str, dict[str, Any]]:
    """The OpenAPI v3 document of each group version (``api/v1``, ``apis/apps/v1``, ...), in
    the order asked.

    Raises:
        OpenAPIError: no ``/openapi/v3`` index, a group version it does not list, or a document
            that is not JSON.
    """
    index = await _get_json(client, "/openapi/v3")
    paths: dict[str, Any] = index.get("paths") or {}
    documents: dict[str, dict[str, Any]] = {}
    for group_version in group_versions:
        entry = paths.get(group_version)
        if not isinstance(entry, dict) or "serverRelativeURL" not in entry:
            raise OpenAPIError(f"the apiserver serves no OpenAPI v3 document for {group_version}")
        documents[group_version] = await _get_json(client, str(entry["serverRelativeURL"]))
    return documents


async def _get_json(client: Client, path: str) -> dict[str, Any]:
    status, body = await client.get_path(path)
    if status != 200:
        raise OpenAPIError(f"GET {path}: HTTP {status}: {body[:200].decode(errors='replace')}")
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise OpenAPIError(f"GET {path}: not JSON: {error}") from None
    if not isinstance(document, dict):
        raise OpenAPIError(f"GET {path}: not a JSON object")
    return document
