"""Kubeconfig writes self-contained kubeconfig files and loads them into kubernetes-asyncio clients.

Certificates are embedded (``*-data`` fields) so a file stays usable on its own, for kubectl, for
users of ``reconcile testenv up`` and for tests that hand a kubeconfig to a controller.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration

from testenv.certs import KeyPair

__all__ = ["load_api_client", "render_kubeconfig", "write_kubeconfig"]


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
    """
    configuration = Configuration()
    await kube_config.load_kube_config(
        config_file=str(path),
        client_configuration=configuration,
        persist_config=False,
        temp_file_path=str(scratch),
    )
    return ApiClient(configuration=configuration)
