"""APIServer runs one upstream kube-apiserver with envtest's defaults against a shared etcd.

Its PKI is generated per server: a serving CA and certificate for 127.0.0.1/localhost, a client CA
(the admin user is CN=admin, O=system:masters) and a service-account signing key. Flags may be
overridden or removed by the user. The server can be stopped and started again on the same port and
storage, which tests use to cut watches.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import aiohttp

from testenv.ports import free_port
from testenv.process import ControlPlaneProcess

__all__ = ["ADMIN_GROUPS", "ADMIN_USER", "APIServer"]

ADMIN_USER: Final = "admin"
ADMIN_GROUPS: Final = ("system:masters",)


class APIServer:
    """A kube-apiserver process, its certificates and how to reach it as admin."""

    def __init__(
        self,
        binary: Path,
        directory: Path,
        *,
        etcd_url: str,
        etcd_prefix: str = "/registry",
        flags: Mapping[str, str | None] | None = None,
        attach_output: bool = False,
        persistent: bool = False,
        name: str = "kube-apiserver",
    ) -> None:
        self.directory = directory
        self.port = free_port()
        self.certs_dir = directory / "certs"
        self.certs_dir.mkdir(parents=True, exist_ok=True)
        # cryptography (~10 MiB) is imported when a control plane is made, not with testenv (which
        # the reconcile CLI imports for its testenv sub-command).
        from testenv.certs import CertificateAuthority

        self.serving_ca = CertificateAuthority("testenv-serving-ca")
        self.client_ca = CertificateAuthority("testenv-client-ca")
        self.admin = self.client_ca.issue_client(ADMIN_USER, ADMIN_GROUPS)
        self.admin_files = self.admin.write(self.certs_dir, "admin")
        self.flags = self._default_flags(etcd_url, etcd_prefix)
        for flag, value in (flags or {}).items():
            if value is None:
                self.flags.pop(flag, None)
            else:
                self.flags[flag] = value
        argv = [str(binary), *(f"--{flag}={value}" for flag, value in self.flags.items())]
        self.process = ControlPlaneProcess(
            name,
            argv,
            log_path=directory / "kube-apiserver.log",
            attach_output=attach_output,
            persistent=persistent,
        )

    @property
    def url(self) -> str:
        """The https URL of the secure port."""
        return f"https://127.0.0.1:{self.port}"

    def _default_flags(self, etcd_url: str, etcd_prefix: str) -> dict[str, str]:
        from testenv.certs import service_account_key

        certs = self.certs_dir
        (certs / "serving-ca.crt").write_bytes(self.serving_ca.cert_pem)
        (certs / "client-ca.crt").write_bytes(self.client_ca.cert_pem)
        serving = self.serving_ca.issue_serving(["localhost", "127.0.0.1"])
        tls_cert, tls_key = serving.write(certs, "apiserver")
        sa_public, sa_key = service_account_key().write(certs, "sa")
        return {
            "etcd-servers": etcd_url,
            "etcd-prefix": etcd_prefix,
            "bind-address": "127.0.0.1",
            "advertise-address": "127.0.0.1",
            # Current releases refuse a loopback advertise address for the endpoints of the
            # `kubernetes` Service; nothing in a testenv cluster routes through it.
            "endpoint-reconciler-type": "none",
            "secure-port": str(self.port),
            "cert-dir": str(certs),
            "tls-cert-file": str(tls_cert),
            "tls-private-key-file": str(tls_key),
            "client-ca-file": str(certs / "client-ca.crt"),
            "service-account-issuer": f"{self.url}/",
            "service-account-key-file": str(sa_public),
            "service-account-signing-key-file": str(sa_key),
            "service-cluster-ip-range": "10.0.0.0/24",
            "authorization-mode": "RBAC",
            "disable-admission-plugins": "ServiceAccount",
            "allow-privileged": "true",
        }

    def ssl_context(self, client_files: tuple[Path, Path] | None = None) -> ssl.SSLContext:
        """A verifying TLS context for the serving CA, presenting a client cert (default admin)."""
        context = ssl.create_default_context(cadata=self.serving_ca.cert_pem.decode())
        context.load_cert_chain(*(client_files or self.admin_files))
        return context

    async def start(self, *, timeout: float) -> None:
        """Start kube-apiserver; ready once /readyz is 200 and the ``default`` namespace exists."""
        context = self.ssl_context()
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:

            async def ready() -> bool:
                return await _ok(session, f"{self.url}/readyz") and await _ok(
                    session, f"{self.url}/api/v1/namespaces/default"
                )

            await self.process.start(ready, timeout=timeout)

    async def stop(self) -> None:
        """Stop kube-apiserver (SIGTERM, then SIGKILL). It can be started again afterwards."""
        await self.process.stop()


async def _ok(session: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as response:
            return response.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False
