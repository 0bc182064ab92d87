"""Kubeconfig writes self-contained kubeconfig files and loads them into kubernetes-asyncio clients.

Certificates are embedded (``*-data`` fields) so a file stays usable on its own, for kubectl, for
users of ``reconcile testenv up`` and for tests that hand a kubeconfig to a controller.
kubernetes-asyncio (its generated API, ~40 MiB once imported) is imported only when a test asks
for one of its clients; it is a test dependency, not one of reconcile's.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

    from testenv.certs import KeyPair

__all__ = ["api_client_for", "load_api_client", "render_kubeconfig", "write_kubeconfig"]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def render_kubeconfig(
    *, cluster: str, server: str, ca_pem: bytes, user: str, credentials: KeyPair
) -> dict[str, Any]:
    """A kubeconfig with one cluster, one client-certificate user and one current context."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _b64(credentials.cert_pem),
                    "client-key-data": _b64(credentials.key_pem),
                },
            }
        ],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
        "preferences": {},
    }


def write_kubeconfig(path: Path, kubeconfig: dict[str, Any]) -> Path:
    """Write ``kubeconfig`` to ``path`` readable only by its owner (it holds a private key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        yaml.safe_dump(kubeconfig, handle, sort_keys=False)
    return path


async def load_api_client(path: Path, *, scratch: Path) -> ApiClient:
    """A kubernetes-asyncio ApiClient for ``path``'s current context, with its own Configuration.

    kubernetes-asyncio writes embedded certificates to files; ``scratch`` keeps them inside the
    control plane's temporary directory so they disappear with it.

    Raises:
        ModuleNotFoundError: kubernetes-asyncio is not installed (a test dependency).
    """
    from kubernetes_asyncio import config as kube_config
    from kubernetes_asyncio.client import ApiClient, Configuration

    configuration = Configuration()
    await kube_config.load_kube_config(
        config_file=str(path),
        client_configuration=configuration,
        persist_config=False,
        temp_file_path=str(scratch),
    )
    return ApiClient(configuration=configuration)


def api_client_for(server: str, *, ca_pem: bytes, credentials: KeyPair, scratch: Path) -> ApiClient:
    """A kubernetes-asyncio ApiClient for ``server`` as the client-certificate user ``credentials``.

    kubernetes-asyncio reads certificates from files: they are written owner-only to ``scratch``.

    Raises:
        ModuleNotFoundError: kubernetes-asyncio is not installed (a test dependency).
    """
    from kubernetes_asyncio.client import ApiClient, Configuration

    scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
    cert, key = credentials.write(scratch, "client")
    ca = scratch / "ca.crt"
    ca.write_bytes(ca_pem)  # public
    configuration = Configuration(host=server)
    configuration.ssl_ca_cert = str(ca)
    configuration.cert_file = str(cert)
    configuration.key_file = str(key)
    return ApiClient(configuration=configuration)
