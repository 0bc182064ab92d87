"""Config is how a client reaches one cluster: the apiserver URL, the CA it trusts, the credentials.

A ``ClusterConfig`` is loaded from a kubeconfig (file, ``$KUBECONFIG`` list or dict, optional
context; see ``client.kubeconfig``) or from the pod's service account, and each one is its own:
nothing process-global is read or set, so one process talks to many clusters (a host and its
members) without their settings leaking into each other. TLS verification always stays on: a
kubeconfig asking to skip it is refused. Credentials (``client.credentials``) never appear in
reprs, logs or error messages; embedded certificates stay in memory (a client key touches the
disk only for the instant ``ssl`` needs a file to load it from, in a private directory).

``ClusterConfig.load()`` picks the source the way controller-runtime's GetConfig does: an explicit
kubeconfig path, else ``$KUBECONFIG``, else the in-cluster service account, else ``~/.kube/config``.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from reconcile.client.credentials import Credentials, TokenFile
from reconcile.client.kubeconfig import (
    ConfigError,
    kubeconfig_paths,
    read_kubeconfig,
    select_context,
)

__all__ = ["ClusterConfig", "ConfigError"]

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_KUBECONFIG: Final = Path("~/.kube/config")


class ClusterConfig:
    """The connection settings of one cluster. Build it with a class method; pass it to ``Client``.

    Raises (at construction):
        ConfigError: ``host`` is not an http(s) URL.
    """

    def __init__(
        self,
        host: str,
        *,
        source: str,
        ca_data: bytes | None = None,
        tls_server_name: str | None = None,
        proxy: str | None = None,
        credentials: Credentials | None = None,
        namespace: str | None = None,
        temp_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if not host.startswith(("https://", "http://")):
            raise ConfigError(f"{source}: server {host!r} is not an http(s) URL")
        self.host = host.rstrip("/")
        """The apiserver URL."""
        self.source = source
        """Where the settings came from (for logs)."""
        self.ca_data = ca_data
        """The PEM CA bundle trusted for the apiserver; None: the system's."""
        self.tls_server_name = tls_server_name
        self.proxy = proxy
        self.credentials = credentials or Credentials()
        self.namespace = namespace
        """The context's namespace, if it names one."""
        self.temp_dir = temp_dir

    def __repr__(self) -> str:
        # Only where it points and where that came from: never tokens, keys or certificate paths.
        return f"ClusterConfig(host={self.host!r}, source={self.source!r})"

    def ssl_context(self, certificate: tuple[bytes, bytes] | None = None) -> ssl.SSLContext:
        """A new TLS context verifying the apiserver, presenting ``certificate`` (PEM) if given.

        Raises:
            ConfigError: the CA bundle or the certificate and key cannot be loaded.
        """
        try:
            if self.ca_data is None:
                context = ssl.create_default_context()
            else:
                context = ssl.create_default_context(cadata=self.ca_data.decode("ascii"))
        except (ssl.SSLError, UnicodeDecodeError, ValueError) as error:
            raise ConfigError(f"{self.source}: unusable certificate authority ({error})") from None
        if certificate is not None:
            self._load_certificate(context, certificate)
        return context

    def _load_certificate(self, context: ssl.SSLContext, certificate: tuple[bytes, bytes]) -> None:
        # ssl loads a certificate chain only from files: write them owner-only into a private
        # (0700) directory, load, and remove them at once; the context keeps them in memory.
        if self.temp_dir is not None:
            Path(self.temp_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="reconcile-tls-", dir=self.temp_dir) as scratch:
            cert, key = Path(scratch, "tls.crt"), Path(scratch, "tls.key")
            for path, pem in ((cert, certificate[0]), (key, certificate[1])):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(pem)
            try:
                context.load_cert_chain(cert, key)
            except (ssl.SSLError, OSError) as error:
                detail = f"unusable client certificate or key ({error.__class__.__name__})"
                raise ConfigError(f"{self.source}: {detail}") from None

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        temp_dir: str | os.PathLike[str] | None = None,
    ) -> ClusterConfig:
        """Load a kubeconfig file (default ``$KUBECONFIG``, then ``~/.kube/config``).

        ``$KUBECONFIG`` (or ``path``) may list several files, merged as kubectl does. ``context``
        defaults to the current context. ``temp_dir`` is where a client key is written for the
        instant ``ssl`` loads it (default: the system temp directory). An exec plugin runs now.

        Raises:
            ConfigError: no such file, no such context, an unusable kubeconfig, or one that asks to
                skip TLS verification.
        """
        listed = str(path) if path is not None else _default_kubeconfig_paths()
        paths = kubeconfig_paths(listed)
        where = f"kubeconfig {listed}"
        document = read_kubeconfig(paths, explicit=path is not None and len(paths) == 1)
        config = await cls._from_document(document, context, where, temp_dir)
        config.source = where + (f" (context {context})" if context else "")
        return config

    @classmethod
    async def from_kubeconfig_dict(
        cls,
        document: Mapping[str, Any],
        *,
        context: str | None = None,
        temp_dir: str | os.PathLike[str] | None = None,
        source: str = "kubeconfig document",
    ) -> ClusterConfig:
        """Load a kubeconfig already parsed into a dict (e.g. from a member cluster's Secret).

        Relative paths in it are relative to the working directory.

        Raises:
            ConfigError: no such context, an unusable kubeconfig, or insecure TLS.
        """
        return await cls._from_document(document, context, source, temp_dir)

    @classmethod
    async def _from_document(
        cls,
        document: Mapping[str, Any],
        context: str | None,
        where: str,
        temp_dir: str | os.PathLike[str] | None,
    ) -> ClusterConfig:
        selected = select_context(document, context, where=where)
        credentials = Credentials.from_user(
            selected.user, where=f"{where}: user {selected.user_name!r}", selection=selected
        )
        config = cls(
            selected.server,
            source=where,
            ca_data=selected.ca_data,
            tls_server_name=selected.tls_server_name,
            proxy=selected.proxy_url,
            credentials=credentials,
            namespace=selected.namespace,
            temp_dir=temp_dir,
        )
        await credentials.prepare()
        config.ssl_context((await credentials.present()).certificate)  # refuse a bad CA or key now
        return config

    @classmethod
    def in_cluster(
        cls,
        *,
        service_account_dir: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
        environ: Mapping[str, str] | None = None,
    ) -> ClusterConfig:
        """The pod's service account: ``KUBERNETES_SERVICE_HOST/PORT``, its token and CA.

        The token file is re-read about every minute, so projected tokens rotate transparently
        (client-go's InClusterConfig).

        Raises:
            ConfigError: not running in a pod (variables or files missing), or an unusable CA.
        """
        env = os.environ if environ is None else environ
        host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
        where = "in-cluster config"
        if not host or not port:
            detail = "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (in a pod)"
            raise ConfigError(f"{where}: {detail}")
        directory = Path(service_account_dir)
        try:
            ca_data = (directory / "ca.crt").read_bytes()
        except OSError as error:
            raise ConfigError(f"{where}: {directory / 'ca.crt'}: {error.strerror}") from None
        hostport = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # IPv6, bracketed
        config = cls(
            f"https://{hostport}",
            source="in-cluster service account",
            ca_data=ca_data,
            credentials=Credentials(token_file=_in_cluster_token(directory, where)),
        )
        config.ssl_context()  # an unusable ca.crt is refused now, not at the first request
        return config

    @classmethod
    async def load(
        cls, kubeconfig: str | os.PathLike[str] | None = None, *, context: str | None = None
    ) -> ClusterConfig:
        """The config a controller should use: ``kubeconfig``, else ``$KUBECONFIG``, else the
        in-cluster service account, else ``~/.kube/config``.

        Raises:
            ConfigError: none of them is usable.
        """
        if kubeconfig is not None or os.environ.get("KUBECONFIG"):
            return await cls.from_kubeconfig(kubeconfig, context=context)
        if os.environ.get("KUBERNETES_SERVICE_HOST") and context is None:
            return cls.in_cluster()
        return await cls.from_kubeconfig(DEFAULT_KUBECONFIG.expanduser(), context=context)


def _default_kubeconfig_paths() -> str:
    return os.environ.get("KUBECONFIG") or str(DEFAULT_KUBECONFIG.expanduser())


def _in_cluster_token(directory: Path, where: str) -> TokenFile:
    try:
        return TokenFile(directory / "token")
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None
