"""Config is how a client reaches one cluster: the apiserver URL, the CA it trusts, the credentials.

A ``ClusterConfig`` wraps its own kubernetes-asyncio ``Configuration``, loaded from a kubeconfig
(file or dict, optional context) or from the pod's service account; the process-global default
Configuration is never read nor set, so one process talks to many clusters (a host and its
members) without their settings leaking into each other. TLS verification always stays on: a
kubeconfig asking to skip it is refused. Credentials never appear in reprs, logs or error messages.

``ClusterConfig.load()`` picks the source the way controller-runtime's GetConfig does: an explicit
kubeconfig path, else ``$KUBECONFIG``, else the in-cluster service account, else ``~/.kube/config``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import anyio
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader

__all__ = ["ClusterConfig", "ConfigError"]

SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_KUBECONFIG: Final = Path("~/.kube/config")


class ConfigError(Exception):
    """No usable cluster configuration: missing file or context, bad kubeconfig, insecure TLS."""


class ClusterConfig:
    """The connection settings of one cluster, holding its own kubernetes-asyncio Configuration.

    Build it with one of the async class methods; pass it to ``Client``.
    """

    def __init__(self, configuration: Configuration, *, source: str) -> None:
        """Wrap a Configuration built elsewhere; ``source`` says where it came from (for logs).

        Raises:
            ConfigError: the configuration disables TLS verification.
        """
        if not configuration.verify_ssl:
            raise ConfigError(f"{source}: refusing to skip TLS verification of the apiserver")
        self.configuration = configuration
        self.source = source

    @property
    def host(self) -> str:
        """The apiserver URL."""
        return str(self.configuration.host)

    def __repr__(self) -> str:
        # Only where it points and where that came from: never tokens, keys or certificate paths.
        return f"ClusterConfig(host={self.host!r}, source={self.source!r})"

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        temp_dir: str | os.PathLike[str] | None = None,
    ) -> ClusterConfig:
        """Load a kubeconfig file (default ``$KUBECONFIG``, then ``~/.kube/config``).

        ``$KUBECONFIG`` may list several files, merged as kubectl does. ``context`` defaults to the
        current context. kubernetes-asyncio writes embedded certificates to files under ``temp_dir``
        (default: the system temp directory, removed at exit).

        Raises:
            ConfigError: no such file, no such context, an unusable kubeconfig, or one that asks to
                skip TLS verification.
        """
        paths = str(path) if path is not None else _default_kubeconfig_paths()
        if not _any_exists(paths):
            raise ConfigError(f"kubeconfig not found: {paths}")
        configuration = Configuration()
        try:
            loader = await kube_config.load_kube_config(
                config_file=paths,
                context=context,
                client_configuration=configuration,
                persist_config=False,
                temp_file_path=None if temp_dir is None else str(temp_dir),
            )
        except (kube_config.ConfigException, KeyError, AssertionError, ValueError) as error:
            raise ConfigError(f"kubeconfig {paths}: {_describe(error)}") from error
        _refresh_exec_tokens(configuration, loader)
        where = f"kubeconfig {paths}" + (f" (context {context})" if context else "")
        return cls(configuration, source=where)

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

        Raises:
            ConfigError: no such context, an unusable kubeconfig, or insecure TLS.
        """
        configuration = Configuration()
        try:
            loader = await kube_config.load_kube_config_from_dict(
                config_dict=dict(document),
                context=context,
                client_configuration=configuration,
                temp_file_path=None if temp_dir is None else str(temp_dir),
            )
        except (kube_config.ConfigException, KeyError, AssertionError, ValueError) as error:
            raise ConfigError(f"{source}: {_describe(error)}") from error
        _refresh_exec_tokens(configuration, loader)
        return cls(configuration, source=source)

    @classmethod
    def in_cluster(
        cls,
        *,
        service_account_dir: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
        environ: Mapping[str, str] | None = None,
    ) -> ClusterConfig:
        """The pod's service account: ``KUBERNETES_SERVICE_HOST/PORT``, its token and CA.

        The token file is re-read about every minute, so projected tokens rotate transparently.

        Raises:
            ConfigError: not running in a pod (variables or files missing).
        """
        directory = Path(service_account_dir)
        configuration = Configuration()
        try:
            InClusterConfigLoader(
                token_filename=str(directory / "token"),
                cert_filename=str(directory / "ca.crt"),
                environ=dict(os.environ if environ is None else environ),
            ).load_and_set(configuration)
        except kube_config.ConfigException as error:
            raise ConfigError(f"in-cluster config: {_describe(error)}") from error
        return cls(configuration, source="in-cluster service account")

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


def _any_exists(paths: str) -> bool:
    # A missing file only makes kubernetes-asyncio log a warning and fail later, obscurely.
    return any(os.path.exists(os.path.expanduser(p)) for p in paths.split(os.pathsep) if p)


def _describe(error: BaseException) -> str:
    # Loader errors name files and keys, never secret values; still keep them to one line.
    return " ".join(str(error).split()) or type(error).__name__


def _refresh_exec_tokens(configuration: Configuration, loader: Any) -> None:
    """Re-run an exec credential plugin when the token it issued expires.

    kubernetes-asyncio runs the plugin once at load; the hook it calls before every request lets
    the loader run it again (it does nothing until the token's expiry, minus its own skew).
    """
    if getattr(loader, "exec_plugin_expiry", None) is None:
        return
    lock = anyio.Lock()

    async def refresh(target: Configuration) -> None:
        async with lock:
            await loader.load_from_exec_plugin()
            target.api_key["BearerToken"] = loader.token

    configuration.refresh_api_key_hook = refresh
