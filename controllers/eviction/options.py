"""Options are the controller-manager's failover settings: taint eviction and graceful eviction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from controllers.eviction.task import PURGE_MODE_GRACEFULLY, PURGE_MODES, PurgeMode

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
