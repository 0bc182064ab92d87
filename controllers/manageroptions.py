"""Manageroptions are the command line's options for the reconcile Manager a command runs.

``MetricsOptions`` (kubebuilder's ``--metrics-*`` flags), ``LeaderElectionOptions``
(component-base's ``--leader-elect*``, as karmada-controller-manager has them) and
``WebhookServerOptions`` (the server controller-runtime's manager makes) each register their own
flags and give the ``reconcile.ManagerOptions`` fields they set (``controllers.flags``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Final, Self

from controllers.duration import parse_duration
from controllers.flags import FlagSet, go_bool
from reconcile import DEFAULT_CERT_NAME, DEFAULT_KEY_NAME, ManagerOptions
from reconcile.manager import DEFAULT_METRICS_BIND_ADDRESS
from reconcile.webhook import DEFAULT_CERT_DIR, DEFAULT_WEBHOOK_PORT, WebhookServer

__all__ = [
    "DEFAULT_LEADER_ELECTION_NAMESPACE",
    "LeaderElectionOptions",
    "MetricsOptions",
    "WebhookServerOptions",
    "manager_options",
]

DEFAULT_LEADER_ELECTION_NAMESPACE: Final = "karmada-system"


@dataclass(frozen=True)
class MetricsOptions:
    """Where and how /metrics is served (``reconcile.ManagerOptions``' ``metrics_*``)."""

    bind_address: str = DEFAULT_METRICS_BIND_ADDRESS
    secure: bool | None = None
    """None: secure unless bound to loopback."""
    cert_dir: str | None = None
    """None: a self-signed certificate."""
    cert_name: str = DEFAULT_CERT_NAME
    key_name: str = DEFAULT_KEY_NAME

    @classmethod
    def add_flags(cls, flags: FlagSet, *, default: str = DEFAULT_METRICS_BIND_ADDRESS) -> None:
        """Register the ``--metrics-*`` flags; ``default`` is the command's bind address."""
        # Names are kubebuilder's (cmd/main.go); the secure default depends on the address.
        flags.add_argument(
            "--metrics-bind-address",
            default=default,
            help="where /metrics listens; :8443 for every interface, 0 to disable "
            f"(default {default})",
        )
        flags.add_argument(
            "--metrics-secure",
            type=go_bool,
            nargs="?",
            const=True,
            default=None,
            metavar="BOOL",
            help="serve /metrics over HTTPS to authenticated, authorized callers only; "
            "--metrics-secure=false serves plain HTTP to anyone "
            "(default: secure unless bound to loopback)",
        )
        flags.add_argument(
            "--metrics-cert-path",
            help="directory with the metrics certificate and key (default: self-signed)",
        )
        flags.add_argument("--metrics-cert-name", default=DEFAULT_CERT_NAME)
        flags.add_argument("--metrics-cert-key", default=DEFAULT_KEY_NAME)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Self:
        """The options ``add_flags``' flags set."""
        return cls(
            bind_address=args.metrics_bind_address,
            secure=args.metrics_secure,
            cert_dir=args.metrics_cert_path,
            cert_name=args.metrics_cert_name,
            key_name=args.metrics_cert_key,
        )

    def manager_fields(self) -> dict[str, Any]:
        """The ``reconcile.ManagerOptions`` keyword arguments these options set."""
        return {
            "metrics_bind_address": self.bind_address,
            "metrics_secure": self.secure,
            "metrics_cert_dir": self.cert_dir,
            "metrics_cert_name": self.cert_name,
            "metrics_key_name": self.key_name,
        }


@dataclass(frozen=True)
class LeaderElectionOptions:
    """Whether replicas elect a leader, where its Lease lives, and its timings (seconds)."""

    leader_elect: bool = False
    resource_namespace: str = DEFAULT_LEADER_ELECTION_NAMESPACE
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    @classmethod
    def add_flags(cls, flags: FlagSet) -> None:
        """Register ``--leader-elect`` and component-base's ``--leader-elect-*`` flags."""
        defaults = cls()
        flags.add_argument("--leader-elect", action="store_true")
        flags.add_argument("--leader-elect-resource-namespace", default=defaults.resource_namespace)
        flags.add_argument(
            "--leader-elect-lease-duration", type=parse_duration, default=defaults.lease_duration
        )
        flags.add_argument(
            "--leader-elect-renew-deadline", type=parse_duration, default=defaults.renew_deadline
        )
        flags.add_argument(
            "--leader-elect-retry-period", type=parse_duration, default=defaults.retry_period
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Self:
        """The options ``add_flags``' flags set."""
        return cls(
            leader_elect=args.leader_elect,
            resource_namespace=args.leader_elect_resource_namespace,
            lease_duration=args.leader_elect_lease_duration,
            renew_deadline=args.leader_elect_renew_deadline,
            retry_period=args.leader_elect_retry_period,
        )

    def manager_fields(self) -> dict[str, Any]:
        """The ``reconcile.ManagerOptions`` keyword arguments these options set."""
        return {
            "leader_election": self.leader_elect,
            "leader_election_namespace": self.resource_namespace,
            "lease_duration": self.lease_duration,
            "renew_deadline": self.renew_deadline,
            "retry_period": self.retry_period,
        }


@dataclass(frozen=True)
class WebhookServerOptions:
    """The manager's webhook server: its port and certificate (kubebuilder's flag names)."""

    port: int = DEFAULT_WEBHOOK_PORT
    cert_dir: str = DEFAULT_CERT_DIR
    cert_name: str = DEFAULT_CERT_NAME
    key_name: str = DEFAULT_KEY_NAME

    @classmethod
    def add_flags(cls, flags: FlagSet) -> None:
        """Register ``--webhook-port`` and the ``--webhook-cert-*`` flags."""
        flags.add_argument(
            "--webhook-port",
            type=int,
            default=DEFAULT_WEBHOOK_PORT,
            help="where webhooks are served, if any (--shard-assignment-webhook, the webhook "
            f"controller; default {DEFAULT_WEBHOOK_PORT})",
        )
        flags.add_argument(
            "--webhook-cert-path",
            default=DEFAULT_CERT_DIR,
            help=f"directory with the webhook certificate and key (default {DEFAULT_CERT_DIR})",
        )
        flags.add_argument("--webhook-cert-name", default=DEFAULT_CERT_NAME)
        flags.add_argument("--webhook-cert-key", default=DEFAULT_KEY_NAME)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Self:
        """The options ``add_flags``' flags set."""
        return cls(
            port=args.webhook_port,
            cert_dir=args.webhook_cert_path,
            cert_name=args.webhook_cert_name,
            key_name=args.webhook_cert_key,
        )

    def server(self) -> WebhookServer:
        """The manager's webhook server; it runs only if a webhook is registered on it."""
        return WebhookServer(
            port=self.port, cert_dir=self.cert_dir, cert_name=self.cert_name, key_name=self.key_name
        )


def manager_options(
    args: argparse.Namespace, *, leader_election_id: str, **fields: Any
) -> ManagerOptions:
    """The ``ManagerOptions`` a command's metrics, probe and leader-election flags set.

    For a process that exits right after its manager stops, so the Lease is handed over on the
    way out; ``fields`` are further ``ManagerOptions`` fields.
    """
    return ManagerOptions(
        **MetricsOptions.from_args(args).manager_fields(),
        health_probe_bind_address=args.health_probe_bind_address,
        **LeaderElectionOptions.from_args(args).manager_fields(),
        leader_election_id=leader_election_id,
        leader_election_release_on_cancel=True,
        **fields,
    )
