"""Options are the controller-manager's failover settings: taint eviction and graceful eviction."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Final, Self

from controllers.duration import parse_duration
from controllers.eviction.task import PURGE_MODE_GRACEFULLY, PURGE_MODES, PurgeMode
from controllers.flags import FlagSet, go_bool

__all__ = ["DEFAULT_GRACEFUL_EVICTION_TIMEOUT", "FailoverOptions"]

DEFAULT_GRACEFUL_EVICTION_TIMEOUT: Final = 600.0


@dataclass(frozen=True)
class FailoverOptions:
    """Karmada's flags for evicting bindings from tainted members, with its defaults.

    ``enable_no_execute_taint_eviction`` (``--enable-no-execute-taint-eviction``, default False)
    turns the taint manager on; ``no_execute_taint_eviction_purge_mode``
    (``--no-execute-taint-eviction-purge-mode``, default Gracefully) is the purge mode of the
    tasks it creates; ``graceful_eviction_timeout`` (``--graceful-eviction-timeout``, default
    10 minutes) is how long a task without gracePeriodSeconds waits for the new placement.

    Raises:
        ValueError: an unknown purge mode, or a timeout that is not positive.
    """

    enable_no_execute_taint_eviction: bool = False
    no_execute_taint_eviction_purge_mode: PurgeMode = PURGE_MODE_GRACEFULLY
    graceful_eviction_timeout: float = DEFAULT_GRACEFUL_EVICTION_TIMEOUT

    def __post_init__(self) -> None:
        if self.no_execute_taint_eviction_purge_mode not in PURGE_MODES:
            raise ValueError(
                f"--no-execute-taint-eviction-purge-mode must be one of {', '.join(PURGE_MODES)}, "
                f"got {self.no_execute_taint_eviction_purge_mode!r}"
            )
        if self.graceful_eviction_timeout <= 0:
            raise ValueError("--graceful-eviction-timeout must be positive")

    @classmethod
    def add_flags(cls, flags: FlagSet) -> None:
        """Register the three flags, with karmada-controller-manager's names and defaults."""
        defaults = cls()
        flags.add_argument(
            "--enable-no-execute-taint-eviction",
            type=go_bool,
            nargs="?",
            const=True,
            default=defaults.enable_no_execute_taint_eviction,
            metavar="BOOL",
            help="evict bindings from members with NoExecute taints they do not tolerate "
            "(default false)",
        )
        flags.add_argument(
            "--no-execute-taint-eviction-purge-mode",
            choices=PURGE_MODES,
            default=defaults.no_execute_taint_eviction_purge_mode,
            help="how such an eviction removes the old copy (default Gracefully)",
        )
        flags.add_argument(
            "--graceful-eviction-timeout",
            type=parse_duration,
            default=defaults.graceful_eviction_timeout,
            help="how long an eviction task waits for the new placement to be healthy "
            "(default 10m)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Self:
        """The options ``add_flags``' flags set.

        Raises:
            ValueError: as the constructor.
        """
        return cls(
            enable_no_execute_taint_eviction=args.enable_no_execute_taint_eviction,
            no_execute_taint_eviction_purge_mode=args.no_execute_taint_eviction_purge_mode,
            graceful_eviction_timeout=args.graceful_eviction_timeout,
        )
