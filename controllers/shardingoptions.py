"""Shardingoptions are the flags of a sharded controller-manager (``--shards`` and company).

Apart from ``controllers.sharding`` (which re-exports them) so that the command line can build
its parser without importing the controllers the sharding keys need.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import socket
from dataclasses import dataclass
from typing import Final

from controllers.flags import FlagSet
from reconcile.sharding import check_shard_name

__all__ = ["LEADER_WEIGHT", "ShardingOptions"]

LEADER_WEIGHT: Final = 0.85
"""The leader's shard's share of the keys, against 1 for each other replica (``--shard-leader-
weight``). Its sharder keeps a slim view of every object of the ring, about 1 KB per object; a
template costs the replica that owns it 16-17 KB (template, binding, Works). Measured by
bench.shardedpropagation at 10,000 templates and N = 2: at 0.85 the leader's and the other's
cache parts were 154 and 156 MiB; at 0.4, 116 and 180 (docs/benchmarks.md)."""


@dataclass(frozen=True)
class ShardingOptions:
    """``--shards`` and its company: this replica's shard name and the Lease timings.

    Raises:
        ValueError: (at construction) a name that cannot name a Lease or be a label value.
    """

    name: str
    namespace: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    admission: bool = False
    """Serve the shard assignment webhook (``--shard-assignment-webhook``) on the manager's
    webhook server: the leader labels new templates with their shard as they are created."""
    leader_weight: float = LEADER_WEIGHT
    """This replica's shard's share of the keys while it leads, against 1 for each other
    (``--shard-leader-weight``)."""

    def __post_init__(self) -> None:
        # At the flag, before any connection: a bad name would otherwise fail only as a Lease
        # the apiserver refuses, again and again.
        check_shard_name(self.name)
        if not 0.0 <= self.leader_weight <= 1.0:
            raise ValueError(
                f"--shard-leader-weight must be within [0, 1], got {self.leader_weight}"
            )

    @classmethod
    def add_flags(cls, flags: FlagSet) -> None:
        """Register ``--shards``, ``--shard-name``, ``--shard-leader-weight`` and
        ``--shard-assignment-webhook`` (the Lease timings are the leader election's flags)."""
        flags.add_argument(
            "--shards",
            choices=["none", "auto"],
            default="none",
            help="auto: spread templates over the replicas (each holds a shard Lease in the "
            "leader election namespace; needs --leader-elect); none (default): one replica does "
            "all",
        )
        flags.add_argument(
            "--shard-name",
            default=os.environ.get("POD_NAME") or socket.gethostname(),
            help="this replica's shard (default: $POD_NAME, else the host name)",
        )
        flags.add_argument(
            "--shard-leader-weight",
            type=float,
            help="the leader's shard's share of the templates against 1 for each other replica, "
            "from 0 to 1: it also runs the sharder (default: controllers.sharding.LEADER_WEIGHT; "
            "docs/operations.md)",
        )
        flags.add_argument(
            "--shard-assignment-webhook",
            action="store_true",
            help="with --shards=auto: serve /assign-shard-karmada on the webhook server "
            "(--webhook-port), where the leader labels new templates with their shard as they "
            "are created (deploy/controller-manager/optional/shard-assignment-webhook.yaml)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ShardingOptions | None:
        """The options the flags set, None for ``--shards=none``; the shard Leases live where
        the leader's does, with its timings (``--leader-elect-*``).

        Raises:
            ValueError: a sharding flag without ``--shards=auto``, ``--shards=auto`` without
                ``--leader-elect``, or as the constructor.
        """
        if args.shards == "none":
            if args.shard_assignment_webhook:
                raise ValueError("--shard-assignment-webhook needs --shards=auto")
            if args.shard_leader_weight is not None:
                raise ValueError("--shard-leader-weight needs --shards=auto")
            return None
        if not args.leader_elect:
            raise ValueError("--shards=auto needs --leader-elect: the leader assigns the shards")
        options = cls(
            name=args.shard_name,
            namespace=args.leader_elect_resource_namespace,
            lease_duration=args.leader_elect_lease_duration,
            renew_deadline=args.leader_elect_renew_deadline,
            retry_period=args.leader_elect_retry_period,
            admission=args.shard_assignment_webhook,
        )
        if args.shard_leader_weight is not None:
            options = dataclasses.replace(options, leader_weight=args.shard_leader_weight)
        return options
