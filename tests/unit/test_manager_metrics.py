"""Which metrics server a manager runs: plain on loopback, HTTPS behind a filter beyond it.

The manager runs on testenv's fake client with a stub filter provider (the real TokenReview /
SubjectAccessReview filter is tested in test_metricsauth.py and, against a real apiserver, in
tests/integration/test_metrics_auth.py); requests are real HTTP(S) on 127.0.0.1.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
import yaml
from aiohttp import web
from structlog.testing import capture_logs

from controllers.cli import _parser, main
from controllers.manageroptions import MetricsOptions
from reconcile import (
    CertificateError,
    HTTPHandler,
    Manager,
    ManagerOptions,
    NotLeader,
    ReviewClient,
)
from testenv import FakeClient
from testenv.certs import CertificateAuthority

asyncio_test = pytest.mark.asyncio(loop_scope="session")


class StubProvider:
    """A filter provider that admits only ``Bearer letmein`` and records its client."""

    def __init__(self) -> None:
        self.clients: list[ReviewClient] = []

    def __call__(self, client: ReviewClient) -> Any:
        self.clients.append(client)

        def wrap(handler: HTTPHandler) -> HTTPHandler:
            async def filtered(request: web.Request) -> web.StreamResponse:
                if request.headers.get("Authorization") != "Bearer letmein":
                    return web.Response(status=401)
                return await handler(request)

            return filtered

        return wrap


@asynccontextmanager
async def _running(**options: Any) -> AsyncIterator[Manager]:
    manager = Manager(client=FakeClient(), options=ManagerOptions(**options))
    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        try:
            yield manager
        finally:
            manager.stop()


async def _get(url: str, *, trust: bytes | None = None, token: str | None = None) -> int:
    context = ssl.create_default_context(cadata=trust.decode()) if trust else None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as http,
        http.get(url, ssl=context or True, headers=headers) as response,
    ):
        return response.status


def test_the_defaults_are_loopback_and_secure_beyond_it() -> None:
    options = ManagerOptions()
    assert options.metrics_bind_address == "127.0.0.1:8080"
    assert options.metrics_secure is None
    assert (options.metrics_cert_name, options.metrics_key_name) == ("tls.crt", "tls.key")


@asyncio_test
async def test_on_loopback_metrics_are_plain_http_without_a_filter() -> None:
    provider = StubProvider()
    async with _running(metrics_bind_address="127.0.0.1:0", metrics_filter_provider=provider) as m:
        assert await _get(f"http://127.0.0.1:{m.metrics_port}/metrics") == 200
        assert m.metrics_certificate is None
    assert provider.clients == []


@asyncio_test
async def test_beyond_loopback_metrics_are_https_behind_the_filter() -> None:
    provider = StubProvider()
    async with _running(metrics_bind_address=":0", metrics_filter_provider=provider) as manager:
        assert manager.metrics_certificate is not None
        url = f"https://127.0.0.1:{manager.metrics_port}/metrics"
        trust = manager.metrics_certificate.cert_pem
        assert await _get(url, trust=trust) == 401
        assert await _get(url, trust=trust, token="letmein") == 200
        assert provider.clients == [manager.api_reader], "reviews go to the manager's own cluster"


@asyncio_test
async def test_secure_can_be_forced_on_loopback_with_a_certificate_directory(
    tmp_path: Path,
) -> None:
    ca = CertificateAuthority("metrics-ca")
    pair = ca.issue_serving(["127.0.0.1"])
    (tmp_path / "cert.pem").write_bytes(pair.cert_pem)
    (tmp_path / "key.pem").write_bytes(pair.key_pem)
    options = {
        "metrics_bind_address": "127.0.0.1:0",
        "metrics_secure": True,
        "metrics_cert_dir": str(tmp_path),
        "metrics_cert_name": "cert.pem",
        "metrics_key_name": "key.pem",
        "metrics_filter_provider": StubProvider(),
    }
    async with _running(**options) as manager:
        url = f"https://127.0.0.1:{manager.metrics_port}/metrics"
        assert await _get(url, trust=ca.cert_pem, token="letmein") == 200


@asyncio_test
async def test_insecure_beyond_loopback_only_when_asked_and_with_a_warning() -> None:
    with capture_logs() as logs:
        async with _running(metrics_bind_address=":0", metrics_secure=False) as manager:
            assert await _get(f"http://127.0.0.1:{manager.metrics_port}/metrics") == 200
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert [entry["event"] for entry in warnings] == [
        "metrics served over plain HTTP without authentication"
    ]


def test_a_missing_certificate_directory_is_refused_when_the_manager_is_made(
    tmp_path: Path,
) -> None:
    options = ManagerOptions(metrics_bind_address=":0", metrics_cert_dir=str(tmp_path))
    with pytest.raises(CertificateError, match=r"tls\.crt: no such file"):
        Manager(client=FakeClient(), options=options)


KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--metrics-cert-path=/nonexistent"], "/nonexistent/tls.crt", id="cert"),
        pytest.param(["--metrics-bind-address=bogus"], "invalid bind address", id="address"),
    ],
)
def test_the_cli_refuses_bad_metrics_flags_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    message: str,
) -> None:
    # Configuring logging would point it at this test's captured stderr, closed afterwards.
    monkeypatch.setattr("controllers.cli.configure_logging", lambda **_: None)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    argv = ["controller-manager", f"--kubeconfig={kubeconfig}", "--metrics-bind-address=:0"]
    assert main([*argv, *flags, "--health-probe-bind-address=0"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("controller-manager: ")
    assert message in error
    assert "\n" not in error


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(
            ["--leader-elect-lease-duration=1s", "--leader-elect-renew-deadline=5s"],
            "must be greater than renew_deadline",
            id="deadline-past-lease",
        ),
        pytest.param(["--leader-elect-retry-period=0"], "retry_period must be positive", id="zero"),
    ],
)
def test_the_cli_refuses_inconsistent_lease_timings_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    message: str,
) -> None:
    monkeypatch.setattr("controllers.cli.configure_logging", lambda **_: None)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    argv = ["controller-manager", f"--kubeconfig={kubeconfig}", "--leader-elect", *flags]
    assert main([*argv, "--metrics-bind-address=0", "--health-probe-bind-address=0"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("controller-manager: ")
    assert message in error
    assert "\n" not in error


def test_the_cli_refuses_a_lease_duration_that_is_not_a_duration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["controller-manager", "--leader-elect-lease-duration=soon"])
    assert exit_info.value.code == 2
    assert "not a duration: 'soon'" in capsys.readouterr().err


def test_a_standby_may_send_reviews_but_no_other_writes() -> None:
    options = ManagerOptions(metrics_bind_address="0", leader_election=True, leader_election_id="x")
    guard = Manager(client=FakeClient(), options=options).api_reader.write_guard
    assert guard is not None
    guard("POST", "/apis/authentication.k8s.io/v1/tokenreviews")
    guard("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews")
    with pytest.raises(NotLeader):
        guard("POST", "/api/v1/namespaces/default/configmaps")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param([], {"metrics_bind_address": "127.0.0.1:8080", "metrics_secure": None}),
        pytest.param(["--metrics-secure"], {"metrics_secure": True}, id="flag alone"),
        pytest.param(["--metrics-secure=false"], {"metrics_secure": False}, id="=false"),
        pytest.param(["--metrics-secure=true"], {"metrics_secure": True}, id="=true"),
        pytest.param(
            ["--metrics-cert-path=/certs", "--metrics-cert-name=a.crt", "--metrics-cert-key=a.key"],
            {
                "metrics_cert_dir": "/certs",
                "metrics_cert_name": "a.crt",
                "metrics_key_name": "a.key",
            },
            id="certificate files",
        ),
    ],
)
def test_cli_metrics_flags_are_kubebuilders(argv: list[str], expected: dict[str, Any]) -> None:
    args = _parser().parse_args(["controller-manager", *argv])
    options = ManagerOptions(**MetricsOptions.from_args(args).manager_fields())
    for name, value in expected.items():
        assert getattr(options, name) == value, name


def test_cli_refuses_a_metrics_secure_value_that_is_not_a_boolean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["controller-manager", "--metrics-secure=maybe"])
    assert "not a boolean: 'maybe'" in capsys.readouterr().err


DEPLOY = Path(__file__).parents[2] / "deploy" / "controller-manager"


def _container() -> dict[str, Any]:
    deployment = yaml.safe_load((DEPLOY / "deployment.yaml").read_text())
    container: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def test_deploy_serves_metrics_securely_on_every_interface() -> None:
    container = _container()
    command = container["command"]
    assert command[:2] == ["reconcile", "controller-manager"]
    args = _parser().parse_args(command[1:])
    options = ManagerOptions(**MetricsOptions.from_args(args).manager_fields())
    assert (options.metrics_bind_address, options.metrics_secure) == (":8443", True)
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports["https"] == 8443
    assert 8080 not in ports.values(), "no plain metrics port left behind"
    # The self-signed certificate's key passes through a temporary file: /tmp must be writable.
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]


def test_deploy_metrics_service_targets_the_https_port() -> None:
    service = yaml.safe_load((DEPLOY / "metrics-service.yaml").read_text())
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 8443, "targetPort": "https", "protocol": "TCP"}
    ]
