"""Cluster validates cluster.karmada.io Clusters at admission: names, endpoints, Secret references.

What karmada-webhook's cluster handler refuses: a name that is no DNS-1123 label of at most 48
characters (the execution namespace ``karmada-es-<name>`` must be a valid name too) and a
``spec.proxyURL`` whose scheme is not http, https or socks5. Then what the controller-manager's
member provider would refuse for a Push cluster (``controllers.cluster.connection.member_spec``, so
the rules are the same code): an ``apiEndpoint`` that is not https (unless insecure endpoints are
allowed), carries user info, a query or fragment; ``insecureSkipTLSVerification``; a
``secretRef`` or ``impersonatorSecretRef`` outside the cluster namespace. The message names the
rule's reason (``InvalidEndpoint``, ...) as the Cluster's Ready condition would. Pull clusters are
reached by their agent, so their endpoint is not checked. Whether the Secret exists and holds a
usable token is the provider's to find out: a Cluster is often created before its Secret. An
update is refused only for a problem the Cluster did not have before (``fields.new_problems``).

One rule reads the host (#26 item 6): a ``secretRef`` or ``impersonatorSecretRef`` naming a
Secret of the cluster namespace that is bound to another Cluster (its controller ownerReference
names a Cluster of another name: ``controllers.cluster.binding.bound_elsewhere``) is refused with
``SecretNotBound``, naming the Secret and the Cluster it belongs to; otherwise whoever may write
Clusters could point one at their own host and at another member's Secret. A Secret bound to no
Cluster yet is admitted (``reconcile join`` writes the Cluster first, then binds its Secret).
Each Secret is read live (``ReadSecret``), at most ``SECRET_LOOKUP_TIMEOUT`` seconds.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final
from urllib.parse import urlsplit

import aiohttp
import anyio
import structlog

from controllers.api import cluster_spec
from controllers.cluster.binding import SECRET_NOT_BOUND, binding_problem, bound_elsewhere
from controllers.cluster.connection import (
    MemberConfigError,
    MemberOptions,
    member_spec,
    secret_reference,
)
from controllers.webhook.fields import invalid, new_problems, refuse_if_any
from reconcile import ApiError, NotFound

__all__ = [
    "CLUSTER_NAME_MAX_LENGTH",
    "SECRET_LOOKUP_TIMEOUT",
    "ClusterValidator",
    "ReadSecret",
    "cluster_problems",
    "secret_binding_problems",
]

CLUSTER_NAME_MAX_LENGTH: Final = 48
"""Karmada's limit: 63 for a namespace name less the 15 of ``karmada-es-``'s prefix room."""

SECRET_LOOKUP_TIMEOUT: Final = 2.0
"""Seconds one Secret read may take at admission; the apiserver gives the whole call 10."""

_SECRET_FIELDS: Final = ("secretRef", "impersonatorSecretRef")
_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_PROXY_SCHEMES: Final = ("http", "https", "socks5")

Obj = dict[str, Any]
ReadSecret = Callable[[str, str], Awaitable[Obj]]
"""Reads Secret (namespace, name) of the host live; raises NotFound when there is none."""

log = structlog.get_logger("controllers.webhook.cluster")


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


def _named_secrets(cluster: Mapping[str, Any], namespace: str) -> list[tuple[str, str]]:
    """(field, Secret name) of each reference to a Secret of ``namespace``; references elsewhere
    are ``member_spec``'s to refuse, and the webhook may read Secrets of ``namespace`` only."""
    spec = cluster_spec(cluster)
    named = []
    for field in _SECRET_FIELDS:
        try:
            name = secret_reference(spec, field, namespace)
        except MemberConfigError:
            continue
        if name is not None:
            named.append((field, name))
    return named


def secret_binding_problems(
    cluster: Mapping[str, Any], secrets: Mapping[str, Mapping[str, Any]], namespace: str
) -> list[str]:
    """Why the webhook refuses a Cluster for the Secrets it names (empty: it admits it).

    ``secrets`` holds the Secrets of ``namespace`` read, by name; one not there (not found, not
    readable in time) is not refused on.
    """
    problems = []
    for field, name in _named_secrets(cluster, namespace):
        secret = secrets.get(name)
        if secret is None or bound_elsewhere(secret, cluster) is None:
            continue
        problem = binding_problem(secret, cluster, f"Secret {namespace}/{name} (spec.{field})")
        if problem is not None:
            problems.append(f"{SECRET_NOT_BOUND}: {problem}")
    return problems


class ClusterValidator:
    """The CustomValidator of Cluster; raises ``Refused``.

    ``options`` must be the controller-manager's (``--cluster-namespace``,
    ``--allow-insecure-member-endpoints``), so that what is admitted is what it can use.
    ``read_secret`` reads a Secret of the cluster namespace (live, not cached: the webhook does
    not watch Secrets); without one, the Secrets Clusters name are not looked at.
    """

    def __init__(
        self,
        options: MemberOptions | None = None,
        *,
        read_secret: ReadSecret | None = None,
        secret_lookup_timeout: float = SECRET_LOOKUP_TIMEOUT,
    ) -> None:
        self.options = options or MemberOptions()
        self.read_secret = read_secret
        self.secret_lookup_timeout = secret_lookup_timeout

    async def _secret(self, read: ReadSecret, name: str) -> Obj | None:
        """Secret ``name`` of the cluster namespace; None when it is not found, or not read.

        A Secret not read in ``secret_lookup_timeout`` or not readable (RBAC, the apiserver
        unreachable) is not refused on: admission only says early what the controller-manager
        enforces anyway, since it uses a Secret only for the Cluster it is bound to
        (``controllers.cluster.binding``: Ready=False, SecretNotBound). Refusing instead would
        make every Cluster write wait on, and fail with, Secret reads.
        """
        namespace = self.options.cluster_namespace
        with anyio.move_on_after(self.secret_lookup_timeout):
            try:
                return await read(namespace, name)
            except NotFound:
                return None
            except (ApiError, aiohttp.ClientError, OSError, TimeoutError) as error:
                log.warning(
                    "cluster Secret not readable: its binding is not checked at admission",
                    secret=f"{namespace}/{name}",
                    error=str(error)[:200],
                )
                return None
        log.warning(
            "cluster Secret not read in time: its binding is not checked at admission",
            secret=f"{namespace}/{name}",
            timeout=self.secret_lookup_timeout,
        )
        return None

    async def _problems(
        self, cluster: Obj, before: Obj | None = None
    ) -> tuple[list[str], list[str]]:
        """The problems of ``cluster`` and of ``before`` (empty when None), the Secrets
        ``cluster`` names read once for both."""
        problems = cluster_problems(cluster, self.options)
        earlier = cluster_problems(before, self.options) if before is not None else []
        read = self.read_secret
        if read is None:
            return problems, earlier
        namespace = self.options.cluster_namespace
        secrets = {}
        for name in dict.fromkeys(name for _, name in _named_secrets(cluster, namespace)):
            secret = await self._secret(read, name)
            if secret is not None:
                secrets[name] = secret
        problems += secret_binding_problems(cluster, secrets, namespace)
        if before is not None:
            earlier += secret_binding_problems(before, secrets, namespace)
        return problems, earlier

    async def validate_create(self, obj: Obj) -> list[str]:
        """Admit a Cluster whose name, proxy and connection the rules accept, naming no Secret
        bound to another Cluster."""
        problems, _ = await self._problems(obj)
        refuse_if_any(problems)
        return []

    async def validate_update(self, old: Obj, new: Obj) -> list[str]:
        """Admit a change that brings no new problem (ratcheting: see ``new_problems``)."""
        after, before = await self._problems(new, old)
        refuse_if_any(new_problems(before, after))
        return []

    async def validate_delete(self, obj: Obj) -> list[str]:
        """Deleting is always allowed."""
        return []
