"""Registry keeps one client and cache per member cluster, made from its Cluster object.

A member is reached at ``spec.apiEndpoint`` with the Secret named by ``spec.secretRef`` (keys
``token`` and ``caBundle``), as ``reconcile join`` writes it; for local use a kubeconfig file per
cluster name may be given instead. The registry adds the member to the manager as a named
``reconcile.Cluster`` (so controllers can watch it) and replaces it when its connection details
change, removes it when the Cluster goes.

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

A new connection comes with a new cache, whose informers start empty: controllers that watch
member objects through it subscribe (``on_connected``) to hear of every (re)connection and look at
that member's objects again.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import re
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Self
from urllib.parse import urlsplit, urlunsplit

import anyio
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
    Cluster,
    ClusterConfig,
    ConfigError,
    Forbidden,
    Manager,
    NotFound,
    Unauthorized,
)

__all__ = [
    "INSECURE_ENDPOINT",
    "INVALID_ENDPOINT",
    "INVALID_KUBECONFIG",
    "INVALID_SECRET",
    "SECRET_NOT_BOUND",
    "SECRET_NOT_FOUND",
    "SECRET_NOT_READABLE",
    "SECRET_REF_NOT_ALLOWED",
    "MemberConfigError",
    "MemberOptions",
    "MemberRegistry",
    "kubeconfig_file_fingerprint",
    "kubeconfig_fingerprint",
    "member_config",
    "member_credentials",
    "member_endpoint",
    "member_kubeconfig",
    "member_spec",
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
SECRET_NOT_READABLE: Final = "SecretNotReadable"
"""The apiserver refused reading the Secret (403/401): the RBAC does not cover it."""
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


class MemberRegistry:
    """Member clusters by name, each a ``reconcile.Cluster`` registered with the manager."""

    def __init__(
        self,
        manager: Manager,
        *,
        kubeconfigs: Mapping[str, Path] | None = None,
        scratch: Path | None = None,
        options: MemberOptions | None = None,
    ) -> None:
        self.manager = manager
        self.kubeconfigs = dict(kubeconfigs or {})
        self.options = options or MemberOptions()
        self._scratch = scratch
        self._fingerprints: dict[str, str] = {}
        self._lifetimes: dict[str, TokenLifetime | None] = {}
        self._listeners: list[Callable[[str], None]] = []
        # The cluster and member-connections controllers both ensure a member: one at a time, so
        # the second finds the first's connection instead of replacing it. A lock lives while
        # its member is registered or an ensure holds or awaits it (``_prune_lock``), so Clusters
        # that come and go, or never connect, leave none behind.
        self._locks: dict[str, anyio.Lock] = {}

    def on_connected(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(name)`` each time member ``name`` gets a new client and cache."""
        self._listeners.append(listener)

    def get(self, name: str) -> Cluster | None:
        """The member called ``name``, or None while it is not (yet) registered."""
        return self.manager.clusters.get(name) if name in self._fingerprints else None

    def names(self) -> list[str]:
        """Registered members, sorted."""
        return sorted(self._fingerprints)

    async def ensure(self, cluster: Mapping[str, Any]) -> Cluster:
        """Register (or re-register after a change) the member for a Cluster object.

        Raises:
            MemberConfigError: no usable or allowed endpoint, Secret or kubeconfig; the member
                is then no longer registered.
            ApiError: the Secret could not be read for another reason (e.g. a timeout).
        """
        name = str(cluster["metadata"]["name"])
        lock = self._locks.setdefault(name, anyio.Lock())
        try:
            async with lock:
                try:
                    return await self._ensure(name, cluster)
                except MemberConfigError as error:
                    # Under the lock: a concurrent ensure's fresh connection must not go too.
                    self._disconnect(name)
                    message = f"cluster {name}: {error}"
                    raise MemberConfigError(error.reason, message) from None
        finally:
            self._prune_lock(name, lock)

    async def _ensure(self, name: str, cluster: Mapping[str, Any]) -> Cluster:
        source, fingerprint, lifetime = await self._source(name, cluster)
        current = self.get(name)
        if current is not None and self._fingerprints.get(name) == fingerprint:
            return current
        config = await self._config(name, source)
        self._disconnect(name)
        member = self.manager.add_cluster(name, config)
        self._fingerprints[name] = fingerprint
        self._lifetimes[name] = lifetime
        for listener in self._listeners:
            listener(name)
        return member

    def token_lifetime(self, name: str) -> TokenLifetime | None:
        """When the token member ``name`` is connected with expires (``expiry``), None when it
        is not connected or the expiry is unknown (a kubeconfig file, a token that is no JWT)."""
        return self._lifetimes.get(name) if name in self._fingerprints else None

    def remove(self, name: str) -> None:
        """Forget the member (stops its cache and closes its clients)."""
        self._disconnect(name)
        lock = self._locks.get(name)
        if lock is not None:
            self._prune_lock(name, lock)

    def _disconnect(self, name: str) -> None:
        self._lifetimes.pop(name, None)
        if self._fingerprints.pop(name, None) is not None:
            self.manager.remove_cluster(name)

    def _prune_lock(self, name: str, lock: anyio.Lock) -> None:
        """Drop a member's lock once no member is registered under it and nobody holds or
        awaits it (a waiter keeps the object it waits on: a new lock would let two in)."""
        if name in self._fingerprints or lock.locked() or lock.statistics().tasks_waiting:
            return
        if self._locks.get(name) is lock:
            del self._locks[name]

    async def _source(
        self, name: str, cluster: Mapping[str, Any]
    ) -> tuple[Any, str, TokenLifetime | None]:
        if name in self.kubeconfigs:
            path = self.kubeconfigs[name]
            return path, kubeconfig_file_fingerprint(path), None
        endpoint, secret_name = member_spec(cluster_spec(cluster), self.options)
        namespace = self.options.cluster_namespace
        where = f"Secret {namespace}/{secret_name}"
        secret = await self._secret(namespace, secret_name)
        kubeconfig = member_kubeconfig(cluster, endpoint, secret, where)
        token = kubeconfig["users"][0]["user"]["token"]
        return kubeconfig, kubeconfig_fingerprint(kubeconfig), token_lifetime(token)

    async def _secret(self, namespace: str, name: str) -> dict[str, Any]:
        where = f"Secret {namespace}/{name}"
        try:
            return await self.manager.api_reader.get(SECRET, name, namespace=namespace)
        except NotFound:
            raise MemberConfigError(SECRET_NOT_FOUND, f"{where} not found") from None
        except (Forbidden, Unauthorized) as error:
            detail = f"{where} cannot be read ({error.reason}): {error.message[:_PREVIEW]}"
            raise MemberConfigError(SECRET_NOT_READABLE, detail) from None

    async def _config(self, name: str, source: Any) -> ClusterConfig:
        return await member_config(name, source, temp_dir=self._scratch)


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
