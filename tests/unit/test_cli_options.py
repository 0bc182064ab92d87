"""The controller-manager's options own their flags: the command line keeps every flag it had.

``CONTROLLER_MANAGER_FLAGS`` and ``WEBHOOK_FLAGS`` are the flags and defaults of the two serving
commands as they were before the options registered their own (issue #27 item 5): a flag that is
dropped, renamed or given another default fails here. Each options dataclass is also checked on a
parser of its own, so that ``from_args`` reads only what ``add_flags`` registers.
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from controllers.cli import _parser
from controllers.cluster import ClusterHealthOptions, ClusterStatusOptions, MemberOptions
from controllers.eviction.options import FailoverOptions
from controllers.flags import OwnsFlags
from controllers.manageroptions import LeaderElectionOptions, MetricsOptions, WebhookServerOptions
from controllers.shardingoptions import ShardingOptions

HOST_NAME: Any = object()
"""Stands for ``--shard-name``'s default, which is the machine's."""

CONTROLLER_MANAGER_FLAGS: dict[str, Any] = {
    "--kubeconfig": None,
    "--context": None,
    "--controllers": "*",
    "--metrics-bind-address": "127.0.0.1:8080",
    "--metrics-secure": None,
    "--metrics-cert-path": None,
    "--metrics-cert-name": "tls.crt",
    "--metrics-cert-key": "tls.key",
    "--health-probe-bind-address": ":8081",
    "--leader-elect": False,
    "--leader-elect-resource-namespace": "karmada-system",
    "--leader-elect-lease-duration": 15.0,
    "--leader-elect-renew-deadline": 10.0,
    "--leader-elect-retry-period": 2.0,
    "--compress-cache": True,
    "--member-kubeconfig": [],
    "--cluster-status-update-frequency": 10.0,
    "--cluster-failure-threshold": 30.0,
    "--cluster-success-threshold": 30.0,
    "--cluster-namespace": "karmada-cluster",
    "--allow-insecure-member-endpoints": False,
    "--interpreter-customizations": None,
    "--interpreter-lua-workers": 2,
    "--cluster-monitor-period": 5.0,
    "--cluster-monitor-grace-period": 40.0,
    "--cluster-startup-grace-period": 60.0,
    "--enable-no-execute-taint-eviction": False,
    "--no-execute-taint-eviction-purge-mode": "Gracefully",
    "--graceful-eviction-timeout": 600.0,
    "--shards": "none",
    "--shard-name": HOST_NAME,
    "--shard-leader-weight": None,
    "--shard-assignment-webhook": False,
    "--webhook-port": 9443,
    "--webhook-cert-path": "/tmp/k8s-webhook-server/serving-certs",
    "--webhook-cert-name": "tls.crt",
    "--webhook-cert-key": "tls.key",
    "--log-format": "console",
    "--log-level": "INFO",
}
WEBHOOK_FLAGS: dict[str, Any] = {
    "--kubeconfig": None,
    "--context": None,
    "--bind-address": "0.0.0.0",
    "--secure-port": 8443,
    "--cert-dir": "/tmp/k8s-webhook-server/serving-certs",
    "--tls-cert-file-name": "tls.crt",
    "--tls-private-key-file-name": "tls.key",
    "--metrics-bind-address": ":8080",
    "--metrics-secure": None,
    "--metrics-cert-path": None,
    "--metrics-cert-name": "tls.crt",
    "--metrics-cert-key": "tls.key",
    "--health-probe-bind-address": ":8000",
    "--cluster-namespace": "karmada-cluster",
    "--allow-insecure-member-endpoints": False,
    "--log-format": "console",
    "--log-level": "INFO",
}


def _command(name: str) -> argparse.ArgumentParser:
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = commands.choices[name]
    return parser


def _flags(parser: argparse.ArgumentParser) -> dict[str, Any]:
    """Each flag of ``parser`` (not --help) with its default, in the order --help lists them."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        (flag,) = action.option_strings
        found[flag] = HOST_NAME if flag == "--shard-name" else action.default
    return found


@pytest.mark.parametrize(
    ("command", "expected"),
    [("controller-manager", CONTROLLER_MANAGER_FLAGS), ("webhook", WEBHOOK_FLAGS)],
    ids=["controller-manager", "webhook"],
)
def test_the_serving_commands_keep_every_flag_and_default(
    command: str, expected: dict[str, Any]
) -> None:
    flags = _flags(_command(command))
    assert list(flags) == list(expected), "a flag was dropped, added, renamed or moved"
    assert flags == expected


OPTIONS: list[tuple[type[OwnsFlags], list[str]]] = [
    (
        ClusterStatusOptions,
        ["--cluster-status-update-frequency=1m", "--cluster-failure-threshold=0"],
    ),
    (MemberOptions, ["--cluster-namespace=fleet", "--allow-insecure-member-endpoints"]),
    (ClusterHealthOptions, ["--cluster-monitor-period=2s", "--cluster-startup-grace-period=3m"]),
    (FailoverOptions, ["--enable-no-execute-taint-eviction", "--graceful-eviction-timeout=1m"]),
    (MetricsOptions, ["--metrics-secure=false", "--metrics-cert-path=/certs"]),
    (LeaderElectionOptions, ["--leader-elect", "--leader-elect-retry-period=500ms"]),
    (WebhookServerOptions, ["--webhook-port=10443", "--webhook-cert-key=k.pem"]),
]


@pytest.mark.parametrize(("options", "argv"), OPTIONS, ids=[o.__name__ for o, _ in OPTIONS])
def test_options_read_back_their_own_flags_alone(options: type[OwnsFlags], argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    options.add_flags(parser)
    assert options.from_args(parser.parse_args([])) == options()
    assert options.from_args(parser.parse_args(argv)) != options()


def test_options_from_args_turn_flags_into_fields() -> None:
    args = _parser().parse_args(
        [
            "controller-manager",
            "--cluster-status-update-frequency=1m",
            "--cluster-failure-threshold=0",
        ]
    )
    assert ClusterStatusOptions.from_args(args) == ClusterStatusOptions(60.0, 0.0, 30.0)
    args = _parser().parse_args(["controller-manager", "--leader-elect-renew-deadline=1m30s"])
    leader = LeaderElectionOptions.from_args(args)
    assert leader.manager_fields()["renew_deadline"] == 90.0
    assert leader.manager_fields()["leader_election_namespace"] == "karmada-system"


def test_options_validate_their_flags() -> None:
    args = _parser().parse_args(["controller-manager", "--cluster-monitor-period=0"])
    with pytest.raises(ValueError, match="cluster monitor period must be positive"):
        ClusterHealthOptions.from_args(args)


def test_sharding_options_take_the_leader_elections_lease_settings() -> None:
    flags = ["--leader-elect", "--leader-elect-resource-namespace=shards", "--shards=auto"]
    args = _parser().parse_args(["controller-manager", *flags, "--shard-name=r1"])
    options = ShardingOptions.from_args(args)
    assert options == ShardingOptions(name="r1", namespace="shards")
    assert ShardingOptions.from_args(_parser().parse_args(["controller-manager"])) is None


def test_run_serves_webhooks_where_its_flags_say() -> None:
    # docs/webhooks.md: a user's setup function registers webhooks; their server is kubebuilder's.
    args = _command("run").parse_args(["m:setup", "--webhook-port=10443", "--webhook-cert-path=/c"])
    server = WebhookServerOptions.from_args(args).server()
    assert (server.port, server.cert_dir) == (10443, "/c")


def test_the_controller_manager_compresses_its_caches_unless_told_not_to() -> None:
    command = _command("controller-manager")
    assert command.parse_args([]).compress_cache is True
    assert command.parse_args(["--compress-cache=false"]).compress_cache is False
    with pytest.raises(SystemExit):
        command.parse_args(["--compress-cache=sometimes"])
