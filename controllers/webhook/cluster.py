"""Cluster validates cluster.karmada.io Clusters at admission: names, endpoints, Secret references.

What karmada-webhook's cluster handler refuses: a name that is no DNS-1123 label of at most 48
characters (the execution namespace ``karmada-es-<name>`` must be a valid name too) and a
``spec.proxyURL`` whose scheme is not http, https or socks5. Then what the controller-manager's
member registry would refuse for a Push cluster (``controllers.cluster.registry.member_spec``, so
the rules are the same code): an ``apiEndpoint`` that is not https (unless insecure endpoints are
allowed), carries user info, a query or fragment; ``insecureSkipTLSVerification``; a
``secretRef`` or ``impersonatorSecretRef`` outside the cluster namespace. The message names the
rule's reason (``InvalidEndpoint``, ...) as the Cluster's Ready condition would. Pull clusters are
reached by their agent, so their endpoint is not checked. Whether the Secret exists and holds a
usable token is the registry's to find out: a Cluster is often created before its Secret. An
update is refused only for a problem the Cluster did not have before (``fields.new_problems``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from controllers.api import cluster_spec
from controllers.cluster.registry import MemberConfigError, MemberOptions, member_spec
from controllers.webhook.fields import invalid, new_problems, refuse_if_any

__all__ = ["CLUSTER_NAME_MAX_LENGTH", "ClusterValidator", "cluster_problems"]

CLUSTER_NAME_MAX_LENGTH: Final = 48
"""Karmada's limit: 63 for a namespace name less the 15 of ``karmada-es-``'s prefix room."""

_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_PROXY_SCHEMES: Final = ("http", "https", "socks5")

Obj = dict[str, Any]


def _name_problems(name: object) -> list[str]:
    text = str(name or "")
    if len(text) > CLUSTER_NAME_MAX_LENGTH:
        why = f"must be no more than {CLUSTER_NAME_MAX_LENGTH} characters"
    elif not _DNS_LABEL.fullmatch(text):
        why = (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
            "'-', and must start and end with an alphanumeric character"
        )
    else:
        return []
    return [invalid("metadata.name", text, why)]


def _proxy_problems(spec: Mapping[str, Any]) -> list[str]:
    proxy = spec.get("proxyURL")
    if not proxy:
        return []
    try:
        scheme = urlsplit(str(proxy)).scheme
    except ValueError as error:
        return [invalid("spec.proxyURL", proxy, str(error))]
    if scheme not in _PROXY_SCHEMES:
        return [
            invalid(
                "spec.proxyURL",
                proxy,
                f"unsupported scheme {scheme!r}, must be http, https, or socks5",
            )
        ]
    return []


def cluster_problems(cluster: Mapping[str, Any], options: MemberOptions) -> list[str]:
    """Why the webhook refuses a Cluster (empty: it admits it)."""
    spec = cluster_spec(cluster)
    problems = _name_problems((cluster.get("metadata") or {}).get("name"))
    problems += _proxy_problems(spec)
    if spec.get("syncMode") != "Pull":
        try:
            member_spec(spec, options)
        except MemberConfigError as error:
            problems.append(f"{error.reason}: {error}")
    return problems


class ClusterValidator:
    """The CustomValidator of Cluster; raises ``Refused``.

    ``options`` must be the controller-manager's (``--cluster-namespace``,
    ``--allow-insecure-member-endpoints``), so that what is admitted is what it can use.
    """

    def __init__(self, options: MemberOptions | None = None) -> None:
        self.options = options or MemberOptions()

    async def validate_create(self, obj: Obj) -> list[str]:
        """Admit a Cluster whose name, proxy and connection the rules accept."""
        refuse_if_any(cluster_problems(obj, self.options))
        return []

    async def validate_update(self, old: Obj, new: Obj) -> list[str]:
        """Admit a change that brings no new problem (ratcheting: see ``new_problems``)."""
        before = cluster_problems(old, self.options)
        refuse_if_any(new_problems(before, cluster_problems(new, self.options)))
        return []

    async def validate_delete(self, obj: Obj) -> list[str]:
        """Deleting is always allowed."""
        return []
