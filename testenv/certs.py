"""Certs generates the certificate authorities and key pairs a testenv control plane runs with.

Each cluster gets a serving CA (kube-apiserver's certificate for localhost/127.0.0.1), a client CA
(admin and users added later authenticate with client certificates; the CN is the user name and the
O entries its groups) and a service-account signing key. ECDSA P-256 keeps generation instant.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertificateAuthority", "KeyPair", "service_account_key"]

_VALIDITY = datetime.timedelta(days=7)


def _private_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM private key."""

    cert_pem: bytes
    key_pem: bytes

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """Write ``<stem>.crt`` and ``<stem>.key`` (mode 0600) into ``directory``."""
        cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
        cert.write_bytes(self.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(self.key_pem)
        return cert, key


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@dataclass
class CertificateAuthority:
    """A self-signed CA that issues serving and client certificates."""

    common_name: str
    _key: ec.EllipticCurvePrivateKey = field(default_factory=_private_key, repr=False)
    _cert: x509.Certificate | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        now = datetime.datetime.now(datetime.UTC)
        builder = self._builder(_name(self.common_name), self._key.public_key(), now)
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        usage = _usage(cert_sign=True)
        self._cert = builder.add_extension(usage, True).sign(self._key, hashes.SHA256())

    @property
    def cert_pem(self) -> bytes:
        """The CA certificate, PEM-encoded (a kubeconfig's certificate-authority-data)."""
        assert self._cert is not None
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def _builder(
        self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey, now: datetime.datetime
    ) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(_name(self.common_name))
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
        )

    def _issue(self, subject: x509.Name, extensions: list[x509.ExtensionType]) -> KeyPair:
        key = _private_key()
        builder = self._builder(subject, key.public_key(), datetime.datetime.now(datetime.UTC))
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        builder = builder.add_extension(_usage(cert_sign=False), True)
        for extension in extensions:
            builder = builder.add_extension(extension, False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))

    def issue_serving(self, hosts: list[str]) -> KeyPair:
        """A server certificate valid for ``hosts`` (DNS names or IP addresses)."""
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        usage = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])
        return self._issue(_name(hosts[0]), [usage, x509.SubjectAlternativeName(names)])

    def issue_client(self, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """A client certificate that kube-apiserver maps to ``user`` in ``groups``."""
        usage = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH])
        return self._issue(_name(user, groups), [usage])


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=not cert_sign,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def service_account_key() -> KeyPair:
    """A key pair for service-account tokens: ``key_pem`` signs, ``cert_pem`` is the public key.

    kube-apiserver verifies tokens with ``--service-account-key-file``, which must hold the public
    key (a PKCS#8 private key there is not accepted).
    """
    key = _private_key()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return KeyPair(public, _key_pem(key))
