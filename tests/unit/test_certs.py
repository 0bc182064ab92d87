"""Generated PKI: serving certs verify for 127.0.0.1, client certs carry user and groups."""

from __future__ import annotations

import ipaddress

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from testenv.certs import CertificateAuthority


def _load(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def test_serving_certificate_is_signed_by_its_ca_for_loopback() -> None:
    ca = CertificateAuthority("serving")
    pair = ca.issue_serving(["localhost", "127.0.0.1"])
    cert, ca_cert = _load(pair.cert_pem), _load(ca.cert_pem)
    cert.verify_directly_issued_by(ca_cert)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_client_certificate_maps_to_user_and_groups() -> None:
    ca = CertificateAuthority("clients")
    cert = _load(ca.issue_client("alice", ("devs", "ops")).cert_pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
    groups = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    assert groups == ["devs", "ops"]
    cert.verify_directly_issued_by(_load(ca.cert_pem))


def test_another_ca_with_the_same_name_does_not_verify_the_certificate() -> None:
    # Every cluster's CA shares a name; only the key tells them apart, as it must.
    cert = _load(CertificateAuthority("same").issue_client("x").cert_pem)
    with pytest.raises(InvalidSignature):
        cert.verify_directly_issued_by(_load(CertificateAuthority("same").cert_pem))


def test_keys_are_p256() -> None:
    cert = _load(CertificateAuthority("c").issue_client("u").cert_pem)
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey)
    assert key.curve.name == "secp256r1"
