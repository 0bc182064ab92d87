"""Credentials: token files re-read for rotation, in-cluster config, exec credential plugins."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reconcile.client.config import ClusterConfig, ConfigError
from reconcile.client.credentials import Credentials, ExecPlugin, TokenFile
from testenv.certs import CertificateAuthority
from tests.builders import FakeClock
from tests.execplugin import V1, V1BETA1, write_plugin

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    return write_plugin(tmp_path / "bin" / "kube-login")


def _spec(plugin: Path, tmp_path: Path, **env: str) -> dict[str, Any]:
    variables = {"PLUGIN_STATE": str(tmp_path / "runs.log"), **env}
    return {
        "apiVersion": V1,
        "command": str(plugin),
        "args": ["--cluster", "one"],
        "env": [{"name": name, "value": value} for name, value in variables.items()],
        "interactiveMode": "Never",
    }


def _runs(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "runs.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def _exec_credentials(spec: dict[str, Any], clock: Callable[[], float]) -> Credentials:
    return Credentials(exec_plugin=ExecPlugin(spec, where="user u", clock=clock))


# --- token files ---------------------------------------------------------------------------------


async def test_a_token_file_is_re_read_after_its_period(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("first\n")
    clock = FakeClock(1_000_000.0)
    source = TokenFile(path, period=60, clock=clock)
    path.write_text("second")
    clock.time += 59
    assert source.token() == "first"
    clock.time += 1
    assert source.token() == "second"


async def test_a_failed_re_read_keeps_the_last_token(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("good")
    clock = FakeClock(1_000_000.0)
    source = TokenFile(path, clock=clock)
    path.unlink()
    clock.time += 61
    assert source.token() == "good"
    path.write_text("")  # caught half-way through a rotation
    clock.time += 61
    assert source.token() == "good"


async def test_a_missing_or_empty_token_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="token file"):
        TokenFile(tmp_path / "absent")
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        TokenFile(tmp_path / "empty")


async def test_a_token_file_wins_over_a_token_as_in_client_go(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file")
    credentials = Credentials(token="inline", token_file=TokenFile(tmp_path / "token"))
    assert (await credentials.present()).authorization == "Bearer from-file"


# --- in-cluster ----------------------------------------------------------------------------------


@pytest.fixture
def service_account(tmp_path: Path) -> Path:
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text("sa-token-1")
    (directory / "ca.crt").write_bytes(CertificateAuthority("cluster-ca").cert_pem)
    return directory


@pytest.mark.parametrize(
    ("host", "url"),
    [("10.0.0.1", "https://10.0.0.1:443"), ("fd00::1", "https://[fd00::1]:443")],
    ids=["ipv4", "ipv6"],
)
async def test_in_cluster_config_reads_the_service_account(
    service_account: Path, host: str, url: str
) -> None:
    environ = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": "443"}
    config = ClusterConfig.in_cluster(service_account_dir=service_account, environ=environ)
    assert config.host == url
    assert config.ca_data == (service_account / "ca.crt").read_bytes()
    assert (await config.credentials.present()).authorization == "Bearer sa-token-1"
    assert "sa-token" not in repr(config)


async def test_in_cluster_tokens_rotate_about_every_minute(service_account: Path) -> None:
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    config = ClusterConfig.in_cluster(service_account_dir=service_account, environ=environ)
    source = config.credentials.token_file
    assert source is not None
    assert source.period == 60
    clock = FakeClock(time.monotonic())  # the clock it read the file by, from now on stepped
    source.clock = clock
    (service_account / "token").write_text("sa-token-2")
    clock.time += 60
    assert (await config.credentials.present()).authorization == "Bearer sa-token-2"


async def test_in_cluster_config_outside_a_pod_is_refused(service_account: Path) -> None:
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST"):
        ClusterConfig.in_cluster(service_account_dir=service_account, environ={})
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    (service_account / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    with pytest.raises(ConfigError, match="unusable certificate authority"):
        ClusterConfig.in_cluster(service_account_dir=service_account, environ=environ)
    (service_account / "token").unlink()
    with pytest.raises(ConfigError, match="token"):
        ClusterConfig.in_cluster(service_account_dir=service_account, environ=environ)


# --- exec plugins --------------------------------------------------------------------------------


async def test_an_exec_plugin_gets_its_args_env_and_exec_info(plugin: Path, tmp_path: Path) -> None:
    ca = CertificateAuthority("exec-ca")
    spec = {**_spec(plugin, tmp_path), "provideClusterInfo": True}
    document = {
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://c.example",
                    "certificate-authority-data": base64.b64encode(ca.cert_pem).decode(),
                    "extensions": [
                        {"name": "client.authentication.k8s.io/exec", "extension": {"aud": "x"}}
                    ],
                },
            }
        ],
        "users": [{"name": "u", "user": {"exec": spec}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    config = await ClusterConfig.from_kubeconfig_dict(document)
    assert (await config.credentials.present()).authorization == "Bearer token-1"
    [run] = _runs(tmp_path)  # run once at load, the answer kept: it has no expiry
    assert run["args"] == ["--cluster", "one"]
    info = json.loads(run["info"])
    assert info["apiVersion"] == V1
    assert info["kind"] == "ExecCredential"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == "https://c.example"
    assert info["spec"]["cluster"]["config"] == {"aud": "x"}
    assert base64.b64decode(info["spec"]["cluster"]["certificate-authority-data"]) == ca.cert_pem


async def test_an_exec_credential_is_used_until_it_expires(plugin: Path, tmp_path: Path) -> None:
    clock = FakeClock(1_700_000_000.0)  # 2023-11-14T22:13:20Z
    spec = _spec(plugin, tmp_path, EXPIRES="2023-11-14T22:23:20Z")  # ten minutes later
    credentials = _exec_credentials(spec, clock)
    assert (await credentials.present()).authorization == "Bearer token-1"
    clock.time += 599
    assert (await credentials.present()).authorization == "Bearer token-1"
    clock.time += 1
    assert (await credentials.present()).authorization == "Bearer token-2"
    assert len(_runs(tmp_path)) == 2


async def test_a_refused_exec_credential_is_replaced_on_the_next_request(
    plugin: Path, tmp_path: Path
) -> None:
    credentials = _exec_credentials(_spec(plugin, tmp_path), FakeClock(1_000_000.0))
    first = await credentials.present()
    credentials.refused(first)
    second = await credentials.present()
    assert (first.authorization, second.authorization) == ("Bearer token-1", "Bearer token-2")
    credentials.refused(first)  # a late 401 for the old credential does not discard the new one
    assert (await credentials.present()).authorization == "Bearer token-2"


async def test_an_exec_plugin_can_issue_a_client_certificate(plugin: Path, tmp_path: Path) -> None:
    pair = CertificateAuthority("exec-client-ca").issue_client("carol")
    cert, key = pair.write(tmp_path, "carol")
    spec = _spec(plugin, tmp_path, PLUGIN_MODE="cert", CERT_FILE=str(cert), KEY_FILE=str(key))
    spec["apiVersion"] = V1BETA1
    spec["env"].append({"name": "PLUGIN_VERSION", "value": V1BETA1})
    presented = await _exec_credentials(spec, FakeClock(1_000_000.0)).present()
    assert presented.certificate == (pair.cert_pem, pair.key_pem)
    assert presented.authorization is None


async def test_a_static_token_wins_over_the_exec_plugin(plugin: Path, tmp_path: Path) -> None:
    plugin_spec = ExecPlugin(_spec(plugin, tmp_path), where="user u")
    credentials = Credentials(token="static", exec_plugin=plugin_spec)
    assert (await credentials.present()).authorization == "Bearer static"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PLUGIN_MODE": "fail"}, "exited 3: login required: run `login`"),
        ({"PLUGIN_MODE": "garbage"}, "printed no JSON ExecCredential"),
        ({"PLUGIN_VERSION": V1BETA1}, "answered apiVersion"),
        ({"EXPIRES": "tomorrow"}, "expirationTimestamp 'tomorrow' is not RFC 3339"),
    ],
    ids=["exit", "garbage", "version", "expiry"],
)
async def test_a_failing_exec_plugin_is_a_config_error(
    plugin: Path, tmp_path: Path, env: dict[str, str], message: str
) -> None:
    credentials = _exec_credentials(_spec(plugin, tmp_path, **env), FakeClock(1_000_000.0))
    with pytest.raises(ConfigError, match=message):
        await credentials.present()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"apiVersion": "client.authentication.k8s.io/v1alpha1"}, "exec apiVersion"),
        ({"interactiveMode": "Always"}, "needs a terminal"),
        ({"command": ""}, "exec has no command"),
    ],
    ids=["v1alpha1", "interactive", "no-command"],
)
async def test_unusable_exec_settings_are_refused(
    plugin: Path, tmp_path: Path, change: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ExecPlugin({**_spec(plugin, tmp_path), **change}, where="user u")


async def test_a_missing_exec_command_shows_its_install_hint(tmp_path: Path) -> None:
    spec = {
        "apiVersion": V1,
        "command": "no-such-login-plugin",
        "installHint": "install it with: brew install no-such-login-plugin",
    }
    credentials = Credentials(exec_plugin=ExecPlugin(spec, where="user u"))
    with pytest.raises(ConfigError, match="brew install no-such-login-plugin"):
        await credentials.present()


async def test_a_relative_exec_command_resolves_against_the_kubeconfig(
    plugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = CertificateAuthority("relative-ca")
    spec = {**_spec(plugin, tmp_path), "command": "bin/kube-login"}
    document = {
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://c.example",
                    "certificate-authority-data": base64.b64encode(ca.cert_pem).decode(),
                },
            }
        ],
        "users": [{"name": "u", "user": {"exec": spec}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(document))
    monkeypatch.chdir(os.sep)
    config = await ClusterConfig.from_kubeconfig(path)
    assert (await config.credentials.present()).authorization == "Bearer token-1"
