"""Connection says how a member cluster is reached from its Cluster object, and what it may ask for.

A member is reached at ``spec.apiEndpoint`` with the Secret named by ``spec.secretRef`` (keys
``token`` and ``caBundle``), as ``reconcile join`` writes it; for local use a kubeconfig file per
cluster name may be given instead. ``ClusterProvider`` (``provider``) engages each member so,
through these functions, and the admission webhook checks Clusters with them.

Whoever may write Clusters would otherwise choose where the controller-manager sends member
credentials, so what a Cluster may ask for is bounded (``MemberOptions``):

- ``apiEndpoint`` is an https URL without user info, query or fragment; ``host`` and ``host:port``
  mean ``https://host[:port]``. Plain ``http://`` is accepted only with
  ``allow_insecure_endpoints`` (the controller-manager's ``--allow-insecure-member-endpoints``,
  for local testing), ``insecureSkipTLSVerification`` never.
- ``secretRef`` and ``impersonatorSecretRef`` name Secrets of the cluster namespace only
  (``karmada-cluster``, Karmada's default; ``--cluster-namespace``, Karmada's flag name), so the
  controller-manager needs to read Secrets there and nowhere else. The impersonator Secret is not
  used (there is no impersonation), but a reference elsewhere is refused all the same.
- the Secret is bound to the Cluster: a controller ownerReference to it, name and uid, as
  ``karmadactl join`` writes (``binding``); else another Cluster's writer could have this one's
  token sent to an endpoint of their choosing. Checked before the token is read.
- the Secret's ``token`` is printable ASCII once surrounding whitespace is trimmed (it becomes an
  Authorization header); a ``caBundle``, when given, holds PEM certificates and is then the only
  trust root (without one, the system's roots are used).

``spec.proxyURL`` and ``spec.proxyHeader`` are not used: members are reached directly, or through
the process's ``HTTPS_PROXY``, and TLS always runs end to end to the member. A Cluster that breaks
a rule raises ``MemberConfigError``, whose ``reason`` names the rule and whose message says what
to change (never the token); an older connection of that member is dropped, since the Cluster as
it now is cannot be used.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Self
from urllib.parse import urlsplit, urlunsplit

import orjson

from controllers.api import (
    KARMADA_CLUSTER_NAMESPACE,
    SECRET_CA_BUNDLE_KEY,
    SECRET_TOKEN_KEY,
    cluster_spec,
)
from controllers.cluster.binding import SECRET_NOT_BOUND, binding_problem
from controllers.cluster.expiry import TokenLifetime, token_lifetime
from controllers.flags import FlagSet
from reconcile import (
    GVK,
    ClusterConfig,
    ConfigError,
)

__all__ = [
    "INSECURE_ENDPOINT",
    "INVALID_ENDPOINT",
    "INVALID_KUBECONFIG",
    "INVALID_SECRET",
    "SECRET_NOT_BOUND",
    "SECRET_NOT_FOUND",
    "SECRET_REF_NOT_ALLOWED",
    "MemberConfigError",
    "MemberConnection",
    "MemberOptions",
    "kubeconfig_file_fingerprint",
    "kubeconfig_fingerprint",
    "member_config",
    "member_connection",
    "member_credentials",
    "member_endpoint",
    "member_kubeconfig",
    "member_spec",
    "secret_name",
    "secret_reference",
]

SECRET: Final = GVK("", "v1", "Secret")

INVALID_ENDPOINT: Final = "InvalidEndpoint"
"""spec.apiEndpoint is missing, not a URL, not https, or carries user info, a query or fragment."""
INSECURE_ENDPOINT: Final = "InsecureEndpoint"
"""spec.apiEndpoint is plain http (not allowed), or the Cluster asks to skip TLS verification."""
SECRET_REF_NOT_ALLOWED: Final = "SecretRefNotAllowed"
"""A Secret reference is missing, has no name, or points outside the cluster namespace."""
SECRET_NOT_FOUND: Final = "SecretNotFound"
"""The referenced Secret does not exist (nor, maybe, its namespace)."""
INVALID_SECRET: Final = "InvalidSecret"
"""The Secret has no usable token (missing, not base64, not UTF-8, not header-safe) or caBundle."""
INVALID_KUBECONFIG: Final = "InvalidKubeconfig"
"""The kubeconfig file given for the member (``--member-kubeconfig``) is unusable."""

_UNSAFE = re.compile(r"[\x00-\x20\x7f-\U0010ffff]")  # whitespace, control and non-ASCII characters
_PREVIEW: Final = 200
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # apimachinery's DNS-1123 label


class MemberConfigError(ValueError):
    """A Cluster does not say how to reach its member in a usable, allowed way.

    ``reason`` (one of this module's constants) goes into the Cluster's Ready condition, the
    message into the condition and a ``MemberConfigInvalid`` Event.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class MemberOptions:
    """Which member connections Clusters may ask for.

    Raises:
        ValueError: ``cluster_namespace`` is empty.
    """

    cluster_namespace: str = KARMADA_CLUSTER_NAMESPACE
    """The only namespace Secrets of Clusters are read from. Defaults to ``karmada-cluster``."""
    allow_insecure_endpoints: bool = False
    """Accept ``http://`` endpoints, sending the token in clear text (local testing only)."""

    def __post_init__(self) -> None:
        if not self.cluster_namespace:
            raise ValueError("the cluster namespace must not be empty")
        if not _NAMESPACE.fullmatch(self.cluster_namespace):
            # Else every Cluster would be refused for a namespace that cannot exist.
            raise ValueError(
                f"the cluster namespace {self.cluster_namespace[:_PREVIEW]!r} is not a namespace "
                "name (a DNS-1123 label: lowercase letters, digits and '-', at most 63)"
            )

    @classmethod
    def add_flags(cls, flags: FlagSet) -> None:
        """Register ``--cluster-namespace`` and ``--allow-insecure-member-endpoints``."""
        flags.add_argument(
            "--cluster-namespace",
            default=cls().cluster_namespace,
            help="the only namespace Secrets of Clusters are read from (default karmada-cluster)",
        )
        flags.add_argument(
            "--allow-insecure-member-endpoints",
            action="store_true",
            help="accept http:// Cluster endpoints, sending member tokens in clear text "
            "(local testing only)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Self:
        """The options ``add_flags``' flags set.

        Raises:
            ValueError: as the constructor.
        """
        return cls(
            cluster_namespace=args.cluster_namespace,
            allow_insecure_endpoints=args.allow_insecure_member_endpoints,
        )


def member_endpoint(endpoint: object, *, allow_insecure: bool = False) -> str:
    """The URL a member is reached at, from a Cluster's ``spec.apiEndpoint``.

    ``host`` and ``host:port`` get ``https://``; the scheme is lowercased and a trailing ``/`` of
    the path dropped (request paths are appended to it).

    Raises:
        MemberConfigError: INVALID_ENDPOINT or INSECURE_ENDPOINT, the message saying why.
    """
    if not isinstance(endpoint, str) or not endpoint:
        raise MemberConfigError(INVALID_ENDPOINT, "spec.apiEndpoint is missing")
    shown = repr(endpoint[:_PREVIEW])
    if _UNSAFE.search(endpoint):
        detail = "contains whitespace, control or non-ASCII characters"
        raise MemberConfigError(INVALID_ENDPOINT, f"spec.apiEndpoint {shown} {detail}")
    url = endpoint if "://" in endpoint else f"https://{endpoint}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is what checks it
    except ValueError as error:
        raise MemberConfigError(
            INVALID_ENDPOINT, f"spec.apiEndpoint {shown} is not a URL: {error}"
        ) from None
    scheme = parts.scheme.lower()
    if scheme == "http" and not allow_insecure:
        raise MemberConfigError(
            INSECURE_ENDPOINT,
            f"spec.apiEndpoint {shown} is plain HTTP: the member's token would cross the network "
            "in clear text; use https:// (or start the controller-manager with "
            "--allow-insecure-member-endpoints, for local testing only)",
        )
    _check_url_parts(parts, scheme, shown)
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def _check_url_parts(parts: Any, scheme: str, shown: str) -> None:
    if scheme not in ("https", "http"):
        wanted = "want https://host[:port][/path], or host[:port]"
        detail = f"has the scheme {parts.scheme!r}: {wanted}"
        raise MemberConfigError(INVALID_ENDPOINT, f"spec.apiEndpoint {shown} {detail}")
    if parts.username is not None or parts.password is not None:
        # Not echoed: the user info may be a password.
        raise MemberConfigError(
            INVALID_ENDPOINT,
            "spec.apiEndpoint carries user info (user@ or user:password@): credentials belong "
            "in the Secret named by spec.secretRef",
        )
    if not parts.hostname:
        raise MemberConfigError(INVALID_ENDPOINT, f"spec.apiEndpoint {shown} names no host")
    if parts.query or parts.fragment:
        detail = "has a query or fragment: want https://host[:port][/path]"
        raise MemberConfigError(INVALID_ENDPOINT, f"spec.apiEndpoint {shown} {detail}")


def member_spec(spec: Mapping[str, Any], options: MemberOptions) -> tuple[str, str]:
    """The member URL and the name of its Secret, from a Cluster's spec, when ``options`` allow
    them: the rules above that need no Secret (the admission webhook checks them too).

    Raises:
        MemberConfigError: INSECURE_ENDPOINT, INVALID_ENDPOINT or SECRET_REF_NOT_ALLOWED.
    """
    if spec.get("insecureSkipTLSVerification"):
        raise MemberConfigError(
            INSECURE_ENDPOINT,
            "insecureSkipTLSVerification is refused; TLS verification is always on (put the "
            "member's CA in the Secret's caBundle)",
        )
    endpoint = member_endpoint(
        spec.get("apiEndpoint"), allow_insecure=options.allow_insecure_endpoints
    )
    namespace = options.cluster_namespace
    secret_name = secret_reference(spec, "secretRef", namespace)
    secret_reference(spec, "impersonatorSecretRef", namespace)  # checked, not used
    if secret_name is None:
        raise MemberConfigError(SECRET_REF_NOT_ALLOWED, "spec.secretRef is missing")
    return endpoint, secret_name


def secret_reference(spec: Mapping[str, Any], field: str, namespace: str) -> str | None:
    """The name of the Secret ``spec[field]`` names, None when the field is absent.

    Raises:
        MemberConfigError: SECRET_REF_NOT_ALLOWED: no name, or a namespace other than
            ``namespace`` (an empty one included).
    """
    reference = spec.get(field)
    if reference is None:
        return None
    if not isinstance(reference, Mapping):
        raise MemberConfigError(SECRET_REF_NOT_ALLOWED, f"spec.{field} is not an object")
    name, where = reference.get("name"), reference.get("namespace")
    if not isinstance(name, str) or not name:
        raise MemberConfigError(SECRET_REF_NOT_ALLOWED, f"spec.{field}.name is missing")
    if where != namespace:
        named = f"Secret {where}/{name}" if where else f"Secret {name} without a namespace"
        raise MemberConfigError(
            SECRET_REF_NOT_ALLOWED,
            f"spec.{field} names {named}: Secrets of Clusters are read only from namespace "
            f"{namespace} (the controller-manager's --cluster-namespace)",
        )
    return name


def member_credentials(secret: Mapping[str, Any], where: str) -> tuple[str, str]:
    """The bearer token and the base64 PEM ``caBundle`` ('' if none) of a member's Secret.

    ``where`` names the Secret in messages. The token is trimmed of surrounding whitespace (a
    token file usually ends with a newline) and appears in no message.

    Raises:
        MemberConfigError: INVALID_SECRET, saying which key is wrong and how.
    """
    data = secret.get("data") or {}
    if not isinstance(data, Mapping):
        raise MemberConfigError(INVALID_SECRET, f"{where}: data is not a map")
    key = f"data.{SECRET_TOKEN_KEY}"
    raw = _decoded(data.get(SECRET_TOKEN_KEY), f"{where}: {key}")
    if raw is None:
        raise MemberConfigError(INVALID_SECRET, f"{where} has no {key}")
    try:
        token = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise MemberConfigError(INVALID_SECRET, f"{where}: {key} is not UTF-8 text") from None
    if not token:
        raise MemberConfigError(INVALID_SECRET, f"{where}: {key} is empty")
    if _UNSAFE.search(token):
        detail = "holds whitespace, control or non-ASCII characters (it is sent as a header)"
        raise MemberConfigError(INVALID_SECRET, f"{where}: {key} {detail}")
    ca = data.get(SECRET_CA_BUNDLE_KEY) or ""
    _check_ca_bundle(_decoded(ca, f"{where}: data.{SECRET_CA_BUNDLE_KEY}"), where)
    return token, str(ca)


def _decoded(value: object, what: str) -> bytes | None:
    if value is None or value == "":
        return None
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise MemberConfigError(INVALID_SECRET, f"{what} is not base64") from None


def _check_ca_bundle(pem: bytes | None, where: str) -> None:
    if pem is None:
        return
    problem = f"{where}: data.{SECRET_CA_BUNDLE_KEY} holds no usable PEM certificate"
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=pem.decode("ascii"))
    except (ssl.SSLError, UnicodeDecodeError, ValueError) as error:
        raise MemberConfigError(INVALID_SECRET, f"{problem} ({error})") from None


@dataclass(frozen=True)
class MemberConnection:
    """How a member is reached, as its Cluster (and Secret, or kubeconfig file) say."""

    source: Path | dict[str, Any]
    """The kubeconfig file, or the kubeconfig ``member_kubeconfig`` made (``member_config``)."""
    fingerprint: str
    """Equal fingerprints, same connection (the token not shown)."""
    lifetime: TokenLifetime | None
    """When the token expires; None for a kubeconfig file or a token that is no JWT."""


def member_connection(
    cluster: Mapping[str, Any],
    secret: Mapping[str, Any] | None,
    options: MemberOptions,
    kubeconfigs: Mapping[str, Path] | None = None,
) -> MemberConnection:
    """The connection to the member of ``cluster``: its kubeconfig file if ``kubeconfigs`` has
    one for its name, else its endpoint with ``secret``, the Secret of the cluster namespace
    named as ``spec.secretRef`` names (``secret_name``; None if there is none).

    Raises:
        MemberConfigError: the Cluster or Secret breaks a rule (``member_spec``,
            SECRET_NOT_FOUND, ``member_kubeconfig``), or the kubeconfig file cannot be read.
    """
    name = str(cluster["metadata"]["name"])
    if kubeconfigs and name in kubeconfigs:
        path = kubeconfigs[name]
        return MemberConnection(path, kubeconfig_file_fingerprint(path), None)
    endpoint, named = member_spec(cluster_spec(cluster), options)
    where = f"Secret {options.cluster_namespace}/{named}"
    if secret is None:
        raise MemberConfigError(SECRET_NOT_FOUND, f"{where} not found")
    kubeconfig = member_kubeconfig(cluster, endpoint, secret, where)
    token = kubeconfig["users"][0]["user"]["token"]
    return MemberConnection(kubeconfig, kubeconfig_fingerprint(kubeconfig), token_lifetime(token))


def secret_name(cluster: Mapping[str, Any]) -> str | None:
    """The name ``spec.secretRef`` gives, None if it gives none (whatever its namespace: the
    Secret is looked up in the cluster namespace, and ``member_spec`` refuses another)."""
    reference = cluster_spec(cluster).get("secretRef")
    name = reference.get("name") if isinstance(reference, Mapping) else None
    return name if isinstance(name, str) and name else None


def member_kubeconfig(
    cluster: Mapping[str, Any], endpoint: str, secret: Mapping[str, Any], where: str
) -> dict[str, Any]:
    """The kubeconfig reaching the member of ``cluster`` at ``endpoint`` (``member_spec``'s)
    with the token and CA of its ``secret`` (``where`` names it in messages).

    Raises:
        MemberConfigError: SECRET_NOT_BOUND, or INVALID_SECRET (``member_credentials``).
    """
    # Before the token is even read: a Secret bound to another Cluster, or to none, is not
    # this Cluster's to use (``binding``).
    problem = binding_problem(secret, cluster, where)
    if problem is not None:
        raise MemberConfigError(SECRET_NOT_BOUND, problem)
    token, ca = member_credentials(secret, where)
    return _kubeconfig(str(cluster["metadata"]["name"]), endpoint, token, ca)


def kubeconfig_file_fingerprint(path: Path) -> str:
    """The digest of a ``--member-kubeconfig`` file, to notice when it changed.

    Raises:
        MemberConfigError: the file cannot be read.
    """
    try:
        content = path.read_bytes()
    except OSError as error:
        raise MemberConfigError(INVALID_KUBECONFIG, f"kubeconfig {path}: {error}") from None
    return hashlib.sha256(content).hexdigest()


def kubeconfig_fingerprint(kubeconfig: Mapping[str, Any]) -> str:
    """A digest of a member kubeconfig: equal digests, same connection (the token not shown)."""
    return hashlib.sha256(orjson.dumps(kubeconfig)).hexdigest()


async def member_config(
    name: str, source: Path | Mapping[str, Any], *, temp_dir: Path | None = None
) -> ClusterConfig:
    """The ``ClusterConfig`` of member ``name`` from its kubeconfig file or ``member_kubeconfig``.

    Raises:
        MemberConfigError: INVALID_KUBECONFIG (a file) or INVALID_SECRET, never showing the token.
    """
    try:
        if isinstance(source, Path):
            return await ClusterConfig.from_kubeconfig(source, temp_dir=temp_dir)
        return await ClusterConfig.from_kubeconfig_dict(
            source, temp_dir=temp_dir, source=f"cluster {name}"
        )
    except ConfigError as error:
        if isinstance(source, Path):
            raise MemberConfigError(INVALID_KUBECONFIG, str(error)) from None
        token = source["users"][0]["user"]["token"]
        message = str(error).replace(token, "<token>")  # loader errors should not, but never
        raise MemberConfigError(INVALID_SECRET, message) from None


def _kubeconfig(name: str, endpoint: str, token: str, ca_bundle_b64: str) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": endpoint}
    if ca_bundle_b64:
        cluster["certificate-authority-data"] = ca_bundle_b64
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }
