"""Log configures structlog for applications built on reconcile; the library never does it itself.

Library code logs through ``structlog.get_logger(...)`` and binds per-reconcile context
(controller, cluster, namespace, name, reconcile_id) with contextvars, so every line written during
one reconcile carries it. ``configure`` is for the application (the CLI calls it): console or JSON
lines on stderr, a level, and a processor that masks credentials wherever a key names one.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, Final

import structlog

__all__ = ["SECRET_KEYS", "configure", "configure_logging", "redact_secrets"]

SECRET_KEYS: Final = frozenset(
    {
        "token",
        "password",
        "authorization",
        "bearer_token",
        "client-key-data",
        "client_key",
        "key_pem",
        "cabundle_key",
    }
)


def redact_secrets(
    _logger: Any, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor masking values whose key names a credential."""
    for key in list(event):
        if key.lower() in SECRET_KEYS:
            event[key] = "***"
    return event


def configure(*, json: bool = False, level: int | str = logging.INFO) -> None:
    """Send structured logs to stderr as console lines (default) or JSON lines."""
    numeric = logging.getLevelName(level) if isinstance(level, str) else level
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(),
            # Chosen, not left to whichever of rich/better-exceptions happens to be installed:
            # rich renders every frame's locals, which costs the event loop milliseconds per
            # failed reconcile and prints objects (clients, requests) nobody should see in a log.
            exception_formatter=structlog.dev.plain_traceback,
        )
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact_secrets,
            structlog.processors.format_exc_info if json else structlog.dev.set_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )


def _stderr_logger(*_args: Any) -> structlog.PrintLogger:
    # sys.stderr as it is when a line is written, not as it was at configure(): a stream
    # swapped out since (pytest's capture ended, a daemon redirected it) may be closed, and a
    # closed stream makes every log call raise where it is made.
    return structlog.PrintLogger(file=sys.stderr)


configure_logging = configure
"""``configure`` under the name ``reconcile`` exports it by."""
