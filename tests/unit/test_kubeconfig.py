"""Kubeconfig loading as kubectl does it: $KUBECONFIG merges, relative paths, contexts, refusals."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconcile.client.config import ClusterConfig, ConfigError
from reconcile.client.kubeconfig import kubeconfig_paths, merge_kubeconfigs, select_context
from testenv.certs import CertificateAuthority, KeyPair

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority("kubeconfig-test-ca")


@pytest.fixture(scope="module")
def client_pair(ca: CertificateAuthority) -> KeyPair:
    return ca.issue_client("alice", ("devs",))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _document(
    ca: CertificateAuthority,
    *,
    cluster: str = "one",
    server: str = "https://one.example:6443",
    user: dict[str, Any] | None = None,
    current: str | None = "one",
    **cluster_fields: Any,
) -> dict[str, Any]:
    body = {"server": server, "certificate-authority-data": _b64(ca.cert_pem), **cluster_fields}
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": body}],
        "users": [{"name": cluster, "user": user if user is not None else {"token": "t0k3n"}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
    }
    if current is not None:
        document["current-context"] = current
    return document


def _write(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path


async def _authorization(config: ClusterConfig) -> str | None:
    return (await config.credentials.present()).authorization


# --- $KUBECONFIG ---------------------------------------------------------------------------------


async def test_the_first_file_wins_each_entry_and_current_context(
    tmp_path: Path, ca: CertificateAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    # clientcmd: a name's entry comes whole from the first file naming it; current-context from
    # the first file that sets it (here the second: the first sets none).
    first = _document(ca, server="https://first.example", current=None)
    second = _document(ca, server="https://second.example", current="two")
    second["clusters"].append({"name": "two", "cluster": {"server": "https://two.example"}})
    second["contexts"].append({"name": "two", "context": {"cluster": "two", "user": "one"}})
    third = _document(ca, current="one")
    files = [_write(tmp_path / f"{n}.yaml", d) for n, d in (("a", first), ("b", second))]
    files.append(_write(tmp_path / "c.yaml", third))
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(map(str, files)))

    current = await ClusterConfig.from_kubeconfig()
    assert current.host == "https://two.example"
    shared = await ClusterConfig.from_kubeconfig(context="one")
    assert shared.host == "https://first.example"
    assert await _authorization(shared) == "Bearer t0k3n"


async def test_missing_files_of_a_list_are_skipped_but_not_all_of_them(
    tmp_path: Path, ca: CertificateAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    present = _write(tmp_path / "present.yaml", _document(ca))
    missing = tmp_path / "missing.yaml"
    monkeypatch.setenv("KUBECONFIG", f"{missing}{os.pathsep}{present}")
    assert (await ClusterConfig.from_kubeconfig()).host == "https://one.example:6443"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    with pytest.raises(ConfigError, match="not found"):
        await ClusterConfig.from_kubeconfig()
    with pytest.raises(ConfigError, match="not found"):
        await ClusterConfig.from_kubeconfig(missing)


async def test_a_malformed_kubeconfig_is_named_by_line_and_column_never_its_content(
    tmp_path: Path,
) -> None:
    # PyYAML's message quotes the offending line: here the line holding the token.
    token = "s3cr3t-t0ken-value"
    broken = tmp_path / "broken.yaml"
    broken.write_text(f"users:\n- name: one\n  user:\n    token: {token}: [unclosed\n")
    with pytest.raises(ConfigError) as raised:
        await ClusterConfig.from_kubeconfig(broken)
    message = str(raised.value)
    assert token not in message
    assert raised.value.__suppress_context__  # a traceback does not print the YAMLError either
    assert "broken.yaml" in message
    assert "line 4, column" in message


async def test_tilde_is_expanded_in_the_list_and_in_paths(
    tmp_path: Path, ca: CertificateAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    document = _document(ca)
    del document["clusters"][0]["cluster"]["certificate-authority-data"]
    document["clusters"][0]["cluster"]["certificate-authority"] = "~/ca.crt"
    _write(tmp_path / "kube" / "config", document)
    monkeypatch.setenv("KUBECONFIG", "~/kube/config")
    config = await ClusterConfig.from_kubeconfig()
    assert config.ca_data == ca.cert_pem
    assert kubeconfig_paths(f"~/a{os.pathsep}{os.pathsep}~/a") == [tmp_path / "a"]


async def test_relative_paths_resolve_against_their_own_file(
    tmp_path: Path, ca: CertificateAuthority, client_pair: KeyPair, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "elsewhere"
    directory.mkdir()
    (directory / "ca.crt").write_bytes(ca.cert_pem)
    cert, key = client_pair.write(directory, "alice")
    user = {"client-certificate": cert.name, "client-key": key.name}
    document = _document(ca, user=user)
    del document["clusters"][0]["cluster"]["certificate-authority-data"]
    document["clusters"][0]["cluster"]["certificate-authority"] = "ca.crt"
    path = _write(directory / "config", document)
    monkeypatch.chdir(tmp_path)  # not the file's directory: the paths must not resolve here
    config = await ClusterConfig.from_kubeconfig(path)
    assert config.ca_data == ca.cert_pem
    presented = await config.credentials.present()
    assert presented.certificate == (client_pair.cert_pem, client_pair.key_pem)
    assert presented.authorization is None


async def test_merging_keeps_the_first_entry_whole() -> None:
    first = {"clusters": [{"name": "c", "cluster": {"server": "https://a"}}]}
    second = {
        "clusters": [{"name": "c", "cluster": {"server": "https://b", "tls-server-name": "x"}}],
        "current-context": "c",
    }
    merged = merge_kubeconfigs([first, second])
    assert merged["clusters"] == [{"name": "c", "cluster": {"server": "https://a"}}]
    assert merged["current-context"] == "c"


# --- contexts and cluster settings ---------------------------------------------------------------


async def test_cluster_settings_are_carried(ca: CertificateAuthority) -> None:
    settings: dict[str, Any] = {"tls-server-name": "apiserver.internal", "proxy-url": "http://p:1"}
    document = _document(ca, **settings)
    document["contexts"][0]["context"]["namespace"] = "team-a"
    config = await ClusterConfig.from_kubeconfig_dict(document)
    assert (config.tls_server_name, config.proxy, config.namespace) == (
        "apiserver.internal",
        "http://p:1",
        "team-a",
    )
    assert config.ssl_context().verify_mode.name == "CERT_REQUIRED"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(lambda d: d.pop("current-context"), "current-context is not set", id="none"),
        pytest.param(
            lambda d: d.update({"current-context": "x"}), "context 'x' not found", id="context"
        ),
        pytest.param(
            lambda d: d["contexts"][0]["context"].update(cluster="gone"),
            "cluster 'gone' of context 'one' not found",
            id="cluster",
        ),
        pytest.param(
            lambda d: d["contexts"][0]["context"].update(user="gone"),
            "user 'gone' of context 'one' not found",
            id="user",
        ),
        pytest.param(
            lambda d: d["clusters"][0]["cluster"].update({"insecure-skip-tls-verify": True}),
            "refusing to skip TLS verification",
            id="insecure",
        ),
        pytest.param(
            lambda d: d["clusters"][0]["cluster"].update(server="one.example:6443"),
            "not an http",
            id="server",
        ),
        pytest.param(
            lambda d: d["clusters"][0]["cluster"].update({"proxy-url": "socks5://p:1080"}),
            "no SOCKS",
            id="socks",
        ),
        pytest.param(
            lambda d: d["clusters"][0]["cluster"].update({"certificate-authority-data": "%%"}),
            "certificate-authority-data is not base64",
            id="ca-base64",
        ),
        pytest.param(
            lambda d: d["clusters"][0]["cluster"].update(
                {"certificate-authority-data": _b64(b"not a certificate")}
            ),
            "unusable certificate authority",
            id="ca-pem",
        ),
        pytest.param(
            lambda d: d["users"][0]["user"].update({"auth-provider": {"name": "gcp"}}),
            "auth-provider 'gcp' is not supported",
            id="auth-provider",
        ),
        pytest.param(
            lambda d: d["users"][0]["user"].update(username="u", password="p"),
            "not both",
            id="token-and-basic",
        ),
        pytest.param(
            lambda d: d["users"][0]["user"].update({"client-certificate-data": _b64(b"x")}),
            "needs both its certificate and its key",
            id="cert-without-key",
        ),
        pytest.param(
            lambda d: d.update(clusters={"one": {}}), "clusters is not a list", id="shape"
        ),
    ],
)
async def test_unusable_kubeconfigs_are_refused_naming_the_problem(
    ca: CertificateAuthority, change: Any, message: str
) -> None:
    document = _document(ca)
    change(document)
    with pytest.raises(ConfigError, match=message) as caught:
        await ClusterConfig.from_kubeconfig_dict(document)
    assert "t0k3n" not in str(caught.value)


async def test_a_client_key_not_matching_its_certificate_is_refused(
    ca: CertificateAuthority, client_pair: KeyPair
) -> None:
    other = ca.issue_client("bob")
    user = {
        "client-certificate-data": _b64(client_pair.cert_pem),
        "client-key-data": _b64(other.key_pem),
    }
    with pytest.raises(ConfigError, match="unusable client certificate or key"):
        await ClusterConfig.from_kubeconfig_dict(_document(ca, user=user))


async def test_embedded_client_keys_leave_no_file_behind(
    tmp_path: Path, ca: CertificateAuthority, client_pair: KeyPair
) -> None:
    user = {
        "client-certificate-data": _b64(client_pair.cert_pem),
        "client-key-data": _b64(client_pair.key_pem),
    }
    config = await ClusterConfig.from_kubeconfig_dict(
        _document(ca, user=user), temp_dir=tmp_path / "scratch"
    )
    config.ssl_context((await config.credentials.present()).certificate)
    assert list((tmp_path / "scratch").iterdir()) == []
    assert (tmp_path / "scratch").stat().st_mode & 0o777 == 0o700


async def test_basic_auth_and_impersonation(ca: CertificateAuthority) -> None:
    user = {
        "username": "admin",
        "password": "s3cret",
        "as": "jane",
        "as-groups": ["devs", "ops"],
        "as-user-extra": {"scopes/x": ["a"]},
    }
    config = await ClusterConfig.from_kubeconfig_dict(_document(ca, user=user))
    assert await _authorization(config) == "Basic " + _b64(b"admin:s3cret")
    assert config.credentials.impersonation == (
        ("Impersonate-User", "jane"),
        ("Impersonate-Group", "devs"),
        ("Impersonate-Group", "ops"),
        ("Impersonate-Extra-scopes%2Fx", "a"),
    )
    assert "s3cret" not in repr(config) + repr(config.credentials)


async def test_select_context_leaves_the_document_unchanged(ca: CertificateAuthority) -> None:
    document = _document(ca)
    document["users"][0]["user"] = None  # an empty user entry, as kubectl writes some
    before = yaml.safe_dump(document)
    selected = select_context(document, "one")
    assert selected.user == {}
    assert yaml.safe_dump(document) == before
    assert "t0k3n" not in repr(selected)
