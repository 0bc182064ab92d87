"""Operation tells a defaulter whether the admission request it serves creates its object.

Karmada gives policies their permanent id on CREATE only. A CustomDefaulter sees the object, so
``creating_request`` asks the webhook server's current request (controller-runtime's
``RequestFromContext``); called outside a request (a test, a direct call) it falls back on the
object itself: the apiserver assigns ``metadata.uid`` after the mutating webhooks of a create, so
an object without one is being created.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconcile.webhook import CREATE, current_request

__all__ = ["creating_request"]


def creating_request(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is being created (else updated)."""
    request = current_request()
    if request is not None:
        return request.operation == CREATE
    return not (obj.get("metadata") or {}).get("uid")
