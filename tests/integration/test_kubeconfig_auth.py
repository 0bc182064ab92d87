"""Kubeconfig credentials against the real kube-apiserver: who the apiserver says we are.

Each kind of user entry (client certificate files, a token file, exec plugins issuing tokens or
certificates) is loaded by ``ClusterConfig`` and checked with a SelfSubjectReview, including the
rotations: a token file rewritten, an exec token refused with 401, an exec certificate expired.
"""

from __future__ import annotations

import base64
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from reconcile.client.client import Client
from reconcile.client.config import ClusterConfig
from reconcile.errors import Unauthorized
from reconcile.gvk import GVK
from testenv import ControlPlane
from tests.builders import FakeClock, service_account_token
from tests.execplugin import V1, write_plugin

pytestmark = pytest.mark.asyncio(loop_scope="session")

SERVICE_ACCOUNT = GVK("", "v1", "ServiceAccount")
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


@pytest_asyncio.fixture(loop_scope="session")
async def admin(host: ControlPlane) -> AsyncIterator[Client]:
    config = await ClusterConfig.from_kubeconfig(host.kubeconfig)
    async with Client(config) as client:
        yield client


async def _whoami(config: ClusterConfig) -> str:
    async with Client(config) as client:
        return await _username(client)


async def _username(client: Client) -> str:
    answer = await client.create(dict(REVIEW))
    return str(answer["status"]["userInfo"]["username"])


def _kubeconfig(host: ControlPlane, directory: Path, user: dict[str, Any]) -> Path:
    """A kubeconfig in ``directory`` naming its CA by a relative path, as users write them."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ca.crt").write_bytes(host.apiserver.serving_ca.cert_pem)
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "host", "cluster": {"server": host.url, "certificate-authority": "ca.crt"}}
        ],
        "users": [{"name": "me", "user": user}],
        "contexts": [{"name": "host", "context": {"cluster": "host", "user": "me"}}],
        "current-context": "host",
    }
    path = directory / "config"
    path.write_text(yaml.safe_dump(document))
    return path


async def test_client_certificate_files_authenticate(host: ControlPlane, tmp_path: Path) -> None:
    dave = await host.add_user("dave", ["devs"])
    for source in dave.cert_files:
        shutil.copy(source, tmp_path / source.name)
    user = {
        "client-certificate": dave.cert_files[0].name,
        "client-key": dave.cert_files[1].name,
    }
    config = await ClusterConfig.from_kubeconfig(_kubeconfig(host, tmp_path, user))
    assert await _whoami(config) == "dave"


async def test_embedded_client_certificates_authenticate(host: ControlPlane) -> None:
    config = await ClusterConfig.from_kubeconfig(host.kubeconfig)
    assert await _whoami(config) == "admin"


async def test_a_token_file_authenticates_and_rotates(
    host: ControlPlane, admin: Client, namespace: str, tmp_path: Path
) -> None:
    first = await service_account_token(admin, namespace, "first")
    second = await service_account_token(admin, namespace, "second")
    (tmp_path / "token").write_text(first)
    config = await ClusterConfig.from_kubeconfig(
        _kubeconfig(host, tmp_path, {"tokenFile": "token"})
    )
    source = config.credentials.token_file
    assert source is not None
    clock = FakeClock(time.monotonic())  # the clock it read the file by, from now on stepped
    source.clock = clock
    async with Client(config) as client:
        assert await _username(client) == f"system:serviceaccount:{namespace}:first"
        (tmp_path / "token").write_text(second)  # the kubelet rotated the projected token
        clock.time += source.period
        assert await _username(client) == f"system:serviceaccount:{namespace}:second"


async def test_an_inline_token_authenticates(
    host: ControlPlane, admin: Client, namespace: str, tmp_path: Path
) -> None:
    token = await service_account_token(admin, namespace, "inline")
    config = await ClusterConfig.from_kubeconfig(_kubeconfig(host, tmp_path, {"token": token}))
    assert await _whoami(config) == f"system:serviceaccount:{namespace}:inline"


async def test_an_exec_token_refused_with_401_is_replaced(
    host: ControlPlane, admin: Client, namespace: str, tmp_path: Path
) -> None:
    (tmp_path / "sa-token").write_text(await service_account_token(admin, namespace, "plugin"))
    plugin = write_plugin(tmp_path / "bin" / "login")
    env = {
        "PLUGIN_STATE": str(tmp_path / "runs.log"),
        "PLUGIN_MODE": "token-file",
        "TOKEN_FILE": str(tmp_path / "sa-token"),
    }
    spec = {
        "apiVersion": V1,
        "command": str(plugin),
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "interactiveMode": "Never",
    }
    config = await ClusterConfig.from_kubeconfig(_kubeconfig(host, tmp_path, {"exec": spec}))
    async with Client(config) as client:
        # The first credential is refused: client-go's exec authenticator does not retry the
        # request, it runs the plugin again for the next one.
        with pytest.raises(Unauthorized):
            await _username(client)
        assert await _username(client) == f"system:serviceaccount:{namespace}:plugin"
    assert len((tmp_path / "runs.log").read_text().splitlines()) == 2


async def test_an_exec_certificate_is_replaced_when_it_expires(
    host: ControlPlane, tmp_path: Path
) -> None:
    plugin = write_plugin(tmp_path / "bin" / "login")
    cert, key = tmp_path / "issued.crt", tmp_path / "issued.key"

    def issue(user: str) -> None:
        pair = host.apiserver.client_ca.issue_client(user)
        cert.write_bytes(pair.cert_pem)
        key.write_bytes(pair.key_pem)

    issue("erin")
    env = {
        "PLUGIN_STATE": str(tmp_path / "runs.log"),
        "PLUGIN_MODE": "cert",
        "CERT_FILE": str(cert),
        "KEY_FILE": str(key),
        "EXPIRES": "2030-01-01T00:00:00Z",
    }
    spec = {
        "apiVersion": V1,
        "command": str(plugin),
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "interactiveMode": "Never",
    }
    config = await ClusterConfig.from_kubeconfig(_kubeconfig(host, tmp_path, {"exec": spec}))
    exec_plugin = config.credentials.exec_plugin
    assert exec_plugin is not None
    clock = FakeClock(1_800_000_000.0)  # 2027: before the expiry
    exec_plugin.clock = clock
    async with Client(config) as client:
        assert await _username(client) == "erin"
        issue("frank")
        assert await _username(client) == "erin", "kept until it expires"
        clock.time = 1_900_000_000.0  # 2030-03: expired
        # New connections present the new certificate: the pool of the old one was closed.
        assert await _username(client) == "frank"


async def test_a_kubeconfig_document_with_a_token_authenticates(
    host: ControlPlane, admin: Client, namespace: str
) -> None:
    token = await service_account_token(admin, namespace, "document")
    ca = base64.b64encode(host.apiserver.serving_ca.cert_pem).decode()
    document = {
        "clusters": [
            {"name": "h", "cluster": {"server": host.url, "certificate-authority-data": ca}}
        ],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "h", "context": {"cluster": "h", "user": "u"}}],
        "current-context": "h",
    }
    config = await ClusterConfig.from_kubeconfig_dict(document)
    assert await _whoami(config) == f"system:serviceaccount:{namespace}:document"
