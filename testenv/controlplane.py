"""ControlPlane is one named testenv cluster: a kube-apiserver plus the ways tests talk to it.

It owns the admin kubeconfig, users added for RBAC tests, CRD installation with a wait until
discovery serves them, kubectl bound to its kubeconfig, and, for tests that ask for one, a
kubernetes-asyncio ApiClient (``api_client``; kubernetes-asyncio is imported only then).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import anyio
import orjson

from testenv.apiserver import ADMIN_USER, APIServer
from testenv.crds import crd_is_served, load_crds
from testenv.kubeconfig import api_client_for, render_kubeconfig, write_kubeconfig

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

__all__ = ["ControlPlane", "RequestError", "User"]


class RequestError(RuntimeError):
    """A request testenv made to its own apiserver failed; carries the status and body."""

    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body}")
        self.status = status
        self.body = body


@dataclass(frozen=True)
class User:
    """A client-certificate user of one control plane, with its own kubeconfig."""

    name: str
    groups: tuple[str, ...]
    kubeconfig: Path
    cert_files: tuple[Path, Path]


class ControlPlane:
    """One cluster of an Environment. Create it through Environment; start()/stop() are its own."""

    def __init__(self, name: str, apiserver: APIServer, kubectl: Path) -> None:
        self.name = name
        self.apiserver = apiserver
        self.kubectl_binary = kubectl
        self.directory = apiserver.directory
        self.kubeconfig = self._write_kubeconfig(ADMIN_USER, apiserver.admin, self.name)
        self._api_client: ApiClient | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        """The apiserver's https URL."""
        return self.apiserver.url

    @property
    def api_client(self) -> ApiClient:
        """A kubernetes-asyncio ApiClient authenticated as admin (only while started).

        Made on first use: importing kubernetes-asyncio costs ~40 MiB, which only tests using
        its generated API should pay. Its session belongs to the event loop that first asks;
        synchronous code asks through the environment's portal (``env.portal.call``).
        """
        if self._session is None:
            raise RuntimeError(f"control plane {self.name!r} is not started")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            detail = "api_client must be made in the event loop: use env.portal.call(...)"
            raise RuntimeError(f"control plane {self.name!r}: {detail}") from None
        if self._api_client is None:
            self._api_client = api_client_for(
                self.url,
                ca_pem=self.apiserver.serving_ca.cert_pem,
                credentials=self.apiserver.admin,
                scratch=self.directory / "client",
            )
        return self._api_client

    def _write_kubeconfig(self, user: str, credentials: Any, file_stem: str) -> Path:
        document = render_kubeconfig(
            cluster=self.name,
            server=self.url,
            ca_pem=self.apiserver.serving_ca.cert_pem,
            user=user,
            credentials=credentials,
        )
        return write_kubeconfig(self.directory / f"{file_stem}.kubeconfig", document)

    async def start(self, *, timeout: float) -> None:
        """Start the apiserver and open the admin clients."""
        await self.apiserver.start(timeout=timeout)
        connector = aiohttp.TCPConnector(ssl=self.apiserver.ssl_context())
        self._session = aiohttp.ClientSession(connector=connector)

    async def stop(self) -> None:
        """Close the clients and stop the apiserver."""
        with anyio.CancelScope(shield=True):
            client, self._api_client = self._api_client, None
            session, self._session = self._session, None
            if client is not None:
                await client.close()
            if session is not None:
                await session.close()
            await self.apiserver.stop()

    async def stop_apiserver(self) -> None:
        """Stop only the kube-apiserver (clients stay open): watches break, requests fail."""
        await self.apiserver.stop()

    async def start_apiserver(self, *, timeout: float = 60.0) -> None:
        """Start the kube-apiserver again on the same port and storage after stop_apiserver()."""
        await self.apiserver.start(timeout=timeout)

    async def request(self, method: str, path: str, body: Any = None) -> Any:
        """Send one admin request to the apiserver and return the decoded JSON body.

        Raises:
            RequestError: any non-2xx answer.
        """
        if self._session is None:
            raise RuntimeError(f"control plane {self.name!r} is not started")
        data = None if body is None else orjson.dumps(body)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        async with self._session.request(
            method, self.url + path, data=data, headers=headers
        ) as response:
            raw = await response.read()
            # Paths the server does not know answer in plain text ("404 page not found").
            is_json = response.content_type == "application/json"
            decoded = orjson.loads(raw) if raw and is_json else raw.decode(errors="replace")
            if response.status >= 300:
                raise RequestError(method, path, response.status, decoded)
            return decoded

    async def server_version(self) -> str:
        """The gitVersion the apiserver reports at /version."""
        version: dict[str, str] = await self.request("GET", "/version")
        return version["gitVersion"]

    async def add_user(self, name: str, groups: Sequence[str] = ()) -> User:
        """Issue a client certificate for ``name`` in ``groups`` and write a kubeconfig for it.

        The user has no permissions beyond what RBAC grants those names (e.g. a RoleBinding).
        """
        credentials = self.apiserver.client_ca.issue_client(name, tuple(groups))
        stem = f"{self.name}-user-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}"
        kubeconfig = self._write_kubeconfig(name, credentials, stem)
        cert_files = credentials.write(self.apiserver.certs_dir, stem)
        return User(name, tuple(groups), kubeconfig, cert_files)

    async def create_namespace(self, name: str) -> None:
        """Create namespace ``name``."""
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        await self.request("POST", "/api/v1/namespaces", body)

    async def install_crds(
        self, paths: Iterable[Path | str], *, timeout: float = 30.0
    ) -> list[dict[str, Any]]:
        """Create or replace the CRDs found in ``paths`` and wait until discovery serves them all.

        Raises:
            TimeoutError: a served version is still missing from discovery after ``timeout``.
        """
        crds = load_crds(paths)
        for crd in crds:
            await self._apply_crd(crd)
        with anyio.fail_after(timeout):
            for crd in crds:
                while not await crd_is_served(self.request, crd):
                    await anyio.sleep(0.05)
        return crds

    async def _apply_crd(self, crd: dict[str, Any]) -> None:
        base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        try:
            await self.request("POST", base, crd)
        except RequestError as error:
            if error.status != 409:
                raise
            current = await self.request("GET", f"{base}/{crd['metadata']['name']}")
            crd["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await self.request("PUT", f"{base}/{crd['metadata']['name']}", crd)

    async def kubectl(
        self, *args: str, user: User | None = None, input: bytes | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        """Run kubectl against this control plane, as admin or as ``user``.

        Raises:
            subprocess.CalledProcessError: kubectl exited non-zero and ``check`` is true.
        """
        kubeconfig = user.kubeconfig if user else self.kubeconfig
        argv = [str(self.kubectl_binary), f"--kubeconfig={kubeconfig}", *args]
        return await anyio.run_process(argv, input=input, check=check)
