"""Credentials are what a client presents to an apiserver: a bearer token, basic auth, a TLS cert.

They are built from a kubeconfig user entry (``Credentials.from_user``) or given directly, with
client-go's semantics:

- ``token``: a static bearer token; ``tokenFile``: a file re-read about every minute (client-go's
  cached file token source), so rotated tokens are picked up; the last value read successfully is
  kept when a re-read fails, and it takes precedence over ``token``.
- ``username``/``password``: HTTP basic auth; a bearer token and basic auth together are refused.
- ``client-certificate``/``client-key`` (``-data`` preferred): the TLS client certificate.
- ``exec``: an exec credential plugin (``client.authentication.k8s.io/v1`` or ``v1beta1``) run
  with its ``args`` and ``env`` on top of the process environment and ``KUBERNETES_EXEC_INFO``;
  it runs non-interactively (``interactiveMode: Always`` is refused) and yields a token or a
  client certificate. It is run again once its ``expirationTimestamp`` has passed and after the
  apiserver answers 401 to the credential it issued (client-go's exec authenticator).
- ``as``, ``as-uid``, ``as-groups``, ``as-user-extra``: impersonation headers.

``auth-provider`` entries (gcp, azure, oidc) were removed from client-go and are refused with a
``ConfigError`` naming the provider. Errors never carry token, password or key values.
"""

from __future__ import annotations

import base64
import contextlib
import os
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import anyio
import orjson

from reconcile.client.kubeconfig import ConfigError, Selection, pem_of

__all__ = [
    "DEFAULT_TOKEN_FILE_PERIOD",
    "EXEC_API_VERSIONS",
    "Credentials",
    "ExecCredential",
    "ExecPlugin",
    "TokenFile",
]

DEFAULT_TOKEN_FILE_PERIOD: Final = 60.0
"""Seconds a token read from a file is used before the file is read again (client-go: 1 minute)."""
EXEC_API_VERSIONS: Final = frozenset(
    {"client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"}
)
"""The ExecCredential versions client-go still speaks (v1alpha1 was removed in 1.24)."""
_STDERR_SHOWN: Final = 300


class TokenFile:
    """A bearer token kept in a file, re-read every ``period`` seconds.

    Raises (at construction):
        ConfigError: the file cannot be read or is empty.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        period: float = DEFAULT_TOKEN_FILE_PERIOD,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.period = period
        self.clock = clock
        self._token = self._read()
        self._read_at = clock()

    def _read(self) -> str:
        try:
            token = self.path.read_text().strip()
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"token file {self.path}: {error.__class__.__name__}") from None
        if not token:
            raise ConfigError(f"token file {self.path} is empty")
        return token

    def token(self) -> str:
        """The token, read again if ``period`` has passed since the last read."""
        now = self.clock()
        if now - self._read_at >= self.period:
            self._read_at = now
            # A failed re-read (a rotation caught half-way, a brief unmount) keeps the last
            # good token, as client-go's cached token source does.
            with contextlib.suppress(ConfigError):
                self._token = self._read()
        return self._token


@dataclass(frozen=True, repr=False)
class ExecCredential:
    """What an exec plugin issued: a token or a client certificate (PEM), until ``expires``."""

    token: str | None
    certificate: tuple[bytes, bytes] | None
    expires: float | None
    """Seconds since the epoch; None: valid until the apiserver refuses it."""

    def __repr__(self) -> str:
        return f"ExecCredential(expires={self.expires!r})"


class ExecPlugin:
    """An exec credential plugin of a kubeconfig user, run when its credential is needed.

    Raises (at construction):
        ConfigError: no command, an unsupported apiVersion, ``interactiveMode: Always``.
    """

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        where: str,
        cluster: Mapping[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.where = where
        self.api_version = str(spec.get("apiVersion") or "")
        if self.api_version not in EXEC_API_VERSIONS:
            supported = ", ".join(sorted(EXEC_API_VERSIONS))
            raise ConfigError(f"{where}: exec apiVersion {self.api_version!r} (use {supported})")
        command = spec.get("command")
        if not isinstance(command, str) or not command:
            raise ConfigError(f"{where}: exec has no command")
        if spec.get("interactiveMode") == "Always":
            raise ConfigError(f"{where}: exec interactiveMode Always needs a terminal")
        self.argv = [command, *(str(arg) for arg in spec.get("args") or ())]
        self.env = {str(e["name"]): str(e.get("value", "")) for e in spec.get("env") or ()}
        self.install_hint = str(spec.get("installHint") or "")
        self._cluster = cluster if spec.get("provideClusterInfo") else None
        self.clock = clock
        self._current: ExecCredential | None = None
        self._lock = anyio.Lock()

    async def credential(self) -> ExecCredential:
        """The current credential, from a new run of the plugin if it expired or was refused.

        Raises:
            ConfigError: the plugin could not run, failed, or answered no usable credential.
        """
        current = self._current
        if current is not None and not self._expired(current):
            return current
        async with self._lock:  # one run for all the requests that found it expired
            current = self._current
            if current is None or self._expired(current):
                current = self._current = await self._run()
        return current

    def _expired(self, credential: ExecCredential) -> bool:
        return credential.expires is not None and self.clock() >= credential.expires

    def refused(self, credential: ExecCredential) -> None:
        """The apiserver answered 401 to ``credential``: the next request runs the plugin again."""
        if self._current is credential:
            self._current = None

    async def _run(self) -> ExecCredential:
        environ = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": self._exec_info()}
        try:
            done = await anyio.run_process(
                self.argv, stdin=_DEVNULL, env=environ, check=False, start_new_session=True
            )
        except OSError as error:
            hint = f" ({self.install_hint.strip()})" if self.install_hint else ""
            raise ConfigError(
                f"{self.where}: exec plugin {self.argv[0]}: {error.strerror or error}{hint}"
            ) from None
        if done.returncode != 0:
            raise ConfigError(
                f"{self.where}: exec plugin {self.argv[0]} exited {done.returncode}"
                f"{_last_line(done.stderr)}"
            )
        return self._parse(done.stdout)

    def _exec_info(self) -> str:
        spec: dict[str, Any] = {"interactive": False}
        if self._cluster is not None:
            spec["cluster"] = self._cluster
        info = {"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec}
        return orjson.dumps(info).decode()

    def _parse(self, output: bytes) -> ExecCredential:
        what = f"{self.where}: exec plugin {self.argv[0]}"
        try:
            answer = orjson.loads(output)
        except orjson.JSONDecodeError:
            raise ConfigError(f"{what} printed no JSON ExecCredential") from None
        if not isinstance(answer, dict) or answer.get("kind") != "ExecCredential":
            raise ConfigError(f"{what} printed no ExecCredential")
        if answer.get("apiVersion") != self.api_version:
            raise ConfigError(
                f"{what} answered apiVersion {answer.get('apiVersion')!r}, not {self.api_version}"
            )
        status = answer.get("status")
        if not isinstance(status, dict):
            raise ConfigError(f"{what} answered no status")
        return ExecCredential(
            token=str(status["token"]) if status.get("token") else None,
            certificate=_exec_certificate(status, what),
            expires=_timestamp(status.get("expirationTimestamp"), what),
        )


_DEVNULL: Final = -3  # subprocess.DEVNULL, without importing subprocess for one constant


def _exec_certificate(status: Mapping[str, Any], what: str) -> tuple[bytes, bytes] | None:
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if not cert and not key:
        if not status.get("token"):
            raise ConfigError(f"{what} answered neither a token nor a client certificate")
        return None
    if not cert or not key:
        raise ConfigError(f"{what} answered clientCertificateData without clientKeyData or back")
    return str(cert).encode(), str(key).encode()


def _timestamp(value: Any, what: str) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ConfigError(f"{what}: expirationTimestamp {value!r} is not RFC 3339") from None


def _last_line(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    return f": {lines[-1][:_STDERR_SHOWN]}" if lines else ""


class Credentials:
    """The credentials of one user; all optional (none: an anonymous client).

    Raises (at construction):
        ConfigError: a bearer token together with basic auth.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        token_file: TokenFile | None = None,
        username: str | None = None,
        password: str | None = None,
        certificate: tuple[bytes, bytes] | None = None,
        exec_plugin: ExecPlugin | None = None,
        impersonation: Sequence[tuple[str, str]] = (),
    ) -> None:
        if (token or token_file) and (username or password):
            raise ConfigError("username/password or bearer token may be set, but not both")
        self._bearer = f"Bearer {token}" if token else None
        self.token_file = token_file
        self._basic = _basic(username, password) if username or password else None
        self._certificate = certificate
        self.exec_plugin = exec_plugin
        self.impersonation = tuple(impersonation)
        """Impersonate-* headers sent with every request."""

    def __repr__(self) -> str:
        return "Credentials(<hidden>)"

    @classmethod
    def from_user(
        cls, user: Mapping[str, Any], *, where: str, selection: Selection | None = None
    ) -> Credentials:
        """The credentials a kubeconfig user entry describes (paths already resolved).

        Raises:
            ConfigError: an auth-provider, an unreadable file, an unusable exec or token setting.
        """
        provider = user.get("auth-provider")
        if provider:
            name = provider.get("name") if isinstance(provider, dict) else provider
            raise ConfigError(
                f"{where}: auth-provider {name!r} is not supported (client-go removed them; use"
                " an exec credential plugin, e.g. kubelogin or gke-gcloud-auth-plugin)"
            )
        return cls(
            token=str(user["token"]) if user.get("token") else None,
            token_file=TokenFile(user["tokenFile"]) if user.get("tokenFile") else None,
            username=str(user["username"]) if user.get("username") else None,
            password=str(user["password"]) if user.get("password") else None,
            certificate=_user_certificate(user, where),
            exec_plugin=_exec_plugin(user, where, selection),
            impersonation=_impersonation(user),
        )

    async def prepare(self) -> None:
        """Run the exec plugin now, if any, so a broken one shows when the config is loaded.

        Raises:
            ConfigError: the plugin failed.
        """
        if self.exec_plugin is not None:
            await self.exec_plugin.credential()

    async def present(self) -> Presented:
        """The Authorization header value and client certificate to send now."""
        bearer = self.token_file.token() if self.token_file is not None else None
        authorization = f"Bearer {bearer}" if bearer else self._bearer or self._basic
        if self.exec_plugin is None:
            return Presented(authorization, self._certificate, None)
        issued = await self.exec_plugin.credential()
        # An Authorization header already set wins over the plugin, as in client-go.
        if authorization is None and issued.token:
            authorization = f"Bearer {issued.token}"
        return Presented(authorization, issued.certificate or self._certificate, issued)

    def refused(self, presented: Presented) -> None:
        """The apiserver answered 401 to ``presented``: expire what the exec plugin issued."""
        if self.exec_plugin is not None and presented.issued is not None:
            self.exec_plugin.refused(presented.issued)


@dataclass(frozen=True, repr=False)
class Presented:
    """The credentials one request carries; ``issued`` is the exec credential they came from."""

    authorization: str | None
    certificate: tuple[bytes, bytes] | None
    issued: ExecCredential | None


def _basic(username: str | None, password: str | None) -> str:
    pair = f"{username or ''}:{password or ''}".encode()
    return "Basic " + base64.b64encode(pair).decode()


def _user_certificate(user: Mapping[str, Any], where: str) -> tuple[bytes, bytes] | None:
    cert = pem_of(user, "client-certificate", where)
    key = pem_of(user, "client-key", where)
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ConfigError(f"{where}: a client certificate needs both its certificate and its key")
    return cert, key


def _exec_plugin(
    user: Mapping[str, Any], where: str, selection: Selection | None
) -> ExecPlugin | None:
    spec = user.get("exec")
    if not spec:
        return None
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: exec is not a mapping")
    return ExecPlugin(
        spec, where=where, cluster=None if selection is None else _cluster_info(selection)
    )


def _cluster_info(selection: Selection) -> dict[str, Any]:
    # ExecCredential's spec.cluster (provideClusterInfo): where the credential will be used.
    info: dict[str, Any] = {"server": selection.server}
    if selection.tls_server_name:
        info["tls-server-name"] = selection.tls_server_name
    if selection.ca_data:
        info["certificate-authority-data"] = base64.b64encode(selection.ca_data).decode()
    if selection.proxy_url:
        info["proxy-url"] = selection.proxy_url
    if selection.exec_cluster_config is not None:
        info["config"] = selection.exec_cluster_config
    return info


def _impersonation(user: Mapping[str, Any]) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    if user.get("as"):
        headers.append(("Impersonate-User", str(user["as"])))
    if user.get("as-uid"):
        headers.append(("Impersonate-Uid", str(user["as-uid"])))
    headers.extend(("Impersonate-Group", str(group)) for group in user.get("as-groups") or ())
    for key, values in (user.get("as-user-extra") or {}).items():
        # The key travels in a header name: percent-encoded, as client-go does.
        name = "Impersonate-Extra-" + urllib.parse.quote(str(key), safe="")
        headers.extend((name, str(value)) for value in values or ())
    return headers
