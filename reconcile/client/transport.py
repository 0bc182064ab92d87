"""Transport carries a client's requests to one apiserver: a pooled aiohttp session, credentials.

The session is created on first use, inside the running event loop (aiohttp's rule), with a TLS
context built from the ``ClusterConfig`` (its CA, the client certificate of the credentials) and
at most ``DEFAULT_CONNECTION_LIMIT`` connections. ``trust_env`` stays off: aiohttp would read
``~/.netrc`` and the proxy variables in worker threads on every request, more than doubling its
CPU; the environment's proxy (``HTTPS_PROXY``/``HTTP_PROXY`` unless ``NO_PROXY`` exempts the
host, as Go's net/http) is resolved once instead, and a kubeconfig's ``proxy-url`` wins over it.
``tls-server-name`` is the name the server's certificate is checked against.

Every request carries the credentials current at the time (a rotated token file, a fresh exec
plugin credential); a 401 answer marks an exec credential as refused so the next request runs the
plugin again. When the client certificate changes (an exec plugin issued a new one), the pool is
replaced, closing the connections that presented the old one, as client-go does.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any, Final

import aiohttp
import anyio
from multidict import CIMultiDict

from reconcile.client.config import ClusterConfig

__all__ = ["DEFAULT_CONNECTION_LIMIT", "DEFAULT_READ_BUFFER", "Transport"]

DEFAULT_CONNECTION_LIMIT: Final = 100
"""Connections open at once to one apiserver (kubernetes-asyncio's pool size, used until now)."""
DEFAULT_READ_BUFFER: Final = 2**21
"""Bytes aiohttp buffers per read: a watch event holding a large object fits (etcd's 1.5 MiB)."""


class Transport:
    """The HTTP connection pool and credentials of one ``ClusterConfig``."""

    def __init__(
        self, config: ClusterConfig, *, connection_limit: int = DEFAULT_CONNECTION_LIMIT
    ) -> None:
        self.config = config
        self.connection_limit = connection_limit
        self._session: aiohttp.ClientSession | None = None
        self._certificate: tuple[bytes, bytes] | None = None
        self._proxy = config.proxy
        self._extra: dict[str, Any] = {}

    def _open_session(self, certificate: tuple[bytes, bytes] | None) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self.connection_limit, ssl=self.config.ssl_context(certificate)
        )
        self._certificate = certificate
        if self._proxy is None:
            self._proxy = _environment_proxy(self.config.host)
        self._extra = {}
        if self._proxy:
            self._extra["proxy"] = self._proxy
        if self.config.tls_server_name:
            self._extra["server_hostname"] = self.config.tls_server_name
        return aiohttp.ClientSession(
            connector=connector, trust_env=False, read_bufsize=DEFAULT_READ_BUFFER
        )

    async def _session_for(self, certificate: tuple[bytes, bytes] | None) -> aiohttp.ClientSession:
        session = self._session
        if session is None:
            session = self._session = self._open_session(certificate)
        elif certificate is not self._certificate:
            # No await between the check and the swap: concurrent requests open one new pool.
            old, session = session, self._open_session(certificate)
            self._session = session
            with anyio.CancelScope(shield=True):
                await old.close()
        return session

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Sequence[tuple[str, str]],
        data: bytes | None,
        headers: dict[str, str],
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """Send one request to ``host + path``; the caller must release the response.

        Raises:
            ConfigError: an exec plugin failed to issue a credential.
            aiohttp.ClientError, OSError, TimeoutError: the server could not be reached.
        """
        credentials = self.config.credentials
        presented = await credentials.present()
        session = await self._session_for(presented.certificate)
        if presented.authorization is not None:
            headers["Authorization"] = presented.authorization
        sent: dict[str, str] | CIMultiDict[str] = headers
        if credentials.impersonation:
            sent = CIMultiDict(headers)
            sent.extend(credentials.impersonation)
        response = await session.request(
            method,
            f"{self.config.host}{path}",
            params=params,
            data=data,
            headers=sent,
            timeout=timeout,
            **self._extra,
        )
        if response.status == 401:
            credentials.refused(presented)
        return response

    async def close(self) -> None:
        """Close the connection pool (a later request opens a new one)."""
        session, self._session = self._session, None
        if session is not None:
            with anyio.CancelScope(shield=True):
                await session.close()


def _environment_proxy(host: str) -> str | None:
    """The HTTPS_PROXY/HTTP_PROXY for ``host`` unless NO_PROXY exempts it (as Go's net/http)."""
    parsed = urllib.parse.urlsplit(host)
    if not parsed.hostname or urllib.request.proxy_bypass(parsed.hostname):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parsed.scheme or "https")
