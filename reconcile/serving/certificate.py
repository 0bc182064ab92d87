"""Servingcert provides the certificate a manager's HTTPS endpoint serves: files from a directory,
or a self-signed certificate generated at start.

As controller-runtime's metrics server: ``tls.crt`` and ``tls.key`` in a certificate directory
(e.g. a mounted Secret from cert-manager), re-read when they change so a rotated certificate is
served without a restart (controller-runtime's certwatcher, which watches and polls): every TLS
handshake compares the files with what is served and a changed pair is loaded before the
handshake goes on, so the next connection after a rotation gets the new certificate; a poll
(``run``) reloads them between connections too. Without a directory, a self-signed
certificate for ``localhost`` and ``127.0.0.1`` — enough to encrypt the scrape, as
kube-controller-manager does by default. Unlike controller-runtime, a directory given without the
files is an error, not a silent fall-back to a self-signed certificate.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
import structlog
from anyio.abc import TaskStatus

__all__ = [
    "DEFAULT_CERT_NAME",
    "DEFAULT_KEY_NAME",
    "CertificateError",
    "ServingCertificate",
]

log = structlog.get_logger("reconcile.serving.certificate")

DEFAULT_CERT_NAME: Final = "tls.crt"
DEFAULT_KEY_NAME: Final = "tls.key"
SELF_SIGNED_HOSTS: Final = ("localhost", "127.0.0.1", "::1")
SELF_SIGNED_VALIDITY: Final = datetime.timedelta(days=365)
RELOAD_INTERVAL: Final = 10.0
"""Seconds between checks of the certificate files for a change."""


class CertificateError(ValueError):
    """The certificate or key cannot be used (missing, unreadable, not a matching pair)."""


@dataclass(frozen=True)
class _Files:
    cert: Path
    key: Path

    def stamp(self) -> tuple[bytes, bytes]:
        """The files' contents: a rotation changes them, even within one tick of a coarse
        file-system clock (mtimes may not); two small reads cost microseconds."""
        return self.cert.read_bytes(), self.key.read_bytes()


def _self_signed() -> tuple[bytes, bytes]:
    # cryptography's x509 costs ~10 MiB once imported: only a manager serving a self-signed
    # certificate pays it, not every process importing reconcile.
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SELF_SIGNED_HOSTS[0])])
    names: list[x509.GeneralName] = [x509.DNSName(SELF_SIGNED_HOSTS[0])]
    names += [x509.IPAddress(ipaddress.ip_address(host)) for host in SELF_SIGNED_HOSTS[1:]]
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # tolerate clock skew
        .not_valid_after(now + SELF_SIGNED_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2  # Kubernetes' serving default
    return context


def _load(context: ssl.SSLContext, files: _Files) -> bytes:
    for path in (files.cert, files.key):
        if not path.is_file():  # ssl's own error names no file
            raise CertificateError(f"serving certificate: {path}: no such file")
    try:
        context.load_cert_chain(files.cert, files.key)
        return files.cert.read_bytes()
    except (OSError, ssl.SSLError) as error:
        raise CertificateError(f"serving certificate {files.cert}, {files.key}: {error}") from error


class ServingCertificate:
    """A server-side TLS context and where its certificate comes from.

    Build one with ``from_directory`` or ``self_signed``. Serve ``context``: with a directory, it
    switches each new connection to the latest good pair on disk; ``run`` (optional) also polls.
    """

    def __init__(self, context: ssl.SSLContext, cert_pem: bytes, files: _Files | None) -> None:
        self.context = context
        self.cert_pem = cert_pem
        """The certificate served now (PEM): what a client of a self-signed one must trust."""
        self._files = files
        self._live = context  # the context new handshakes are switched to
        self._stamp: tuple[bytes, bytes] | None = None
        self._rejected: tuple[bytes, bytes] | None = None  # a bad pair, logged once
        if files is not None:
            self._stamp = files.stamp()
            context.sni_callback = self._on_handshake

    @classmethod
    def from_directory(
        cls,
        directory: str | os.PathLike[str],
        *,
        cert_name: str = DEFAULT_CERT_NAME,
        key_name: str = DEFAULT_KEY_NAME,
    ) -> ServingCertificate:
        """``directory/cert_name`` and ``directory/key_name`` (PEM).

        Raises:
            CertificateError: a file is missing or unreadable, or the two do not match.
        """
        files = _Files(Path(directory) / cert_name, Path(directory) / key_name)
        context = _server_context()
        return cls(context, _load(context, files), files)

    @classmethod
    def self_signed(cls) -> ServingCertificate:
        """A new self-signed certificate for localhost, 127.0.0.1 and ::1, valid for a year."""
        cert_pem, key_pem = _self_signed()
        context = _server_context()
        # ssl loads key pairs from files only: write them to a private directory, load, delete.
        with tempfile.TemporaryDirectory(prefix="reconcile-cert-") as directory:
            files = _Files(Path(directory) / DEFAULT_CERT_NAME, Path(directory) / DEFAULT_KEY_NAME)
            files.cert.write_bytes(cert_pem)
            files.key.touch(mode=0o600)
            files.key.write_bytes(key_pem)
            _load(context, files)
        return cls(context, cert_pem, None)

    def _on_handshake(
        self, connection: ssl.SSLObject | ssl.SSLSocket, _server_name: str | None, _: ssl.SSLContext
    ) -> None:
        # OpenSSL calls this once the ClientHello is in, with or without SNI (a client dialling
        # an IP address sends none). Switching the connection's context swaps its certificate;
        # the context it started with may be the same object, which OpenSSL would not re-read.
        try:
            self.refresh()
            if connection.context is not self._live:
                connection.context = self._live
        except Exception as error:  # a failing callback would fail the handshake
            log.warning("serving certificate check failed", error=str(error))

    def refresh(self) -> bool:
        """Load the files if they changed since last loaded; whether a new pair is now served.

        A broken update (say, a half-written pair) is logged once and the previous certificate
        stays in use until the files change again.
        """
        if self._files is None:
            return False
        files = self._files
        try:
            current = files.stamp()
        except OSError as error:
            log.warning("serving certificate not reloaded", error=str(error))
            return False
        if current in (self._stamp, self._rejected):
            return False
        try:
            context = _server_context()
            cert_pem = _load(context, files)
        except CertificateError as error:
            self._rejected = current
            log.warning("serving certificate not reloaded", error=str(error))
            return False
        self._live, self.cert_pem, self._stamp = context, cert_pem, current
        log.info("serving certificate reloaded", cert=str(files.cert))
        return True

    async def run(
        self,
        *,
        interval: float = RELOAD_INTERVAL,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Poll the files every ``interval`` seconds and reload them when changed, until cancelled.

        Handshakes check the files themselves; the poll keeps ``cert_pem`` current and the
        reload logged while no client connects.
        """
        task_status.started()
        if self._files is None:
            return
        while True:
            await anyio.sleep(interval)
            self.refresh()
