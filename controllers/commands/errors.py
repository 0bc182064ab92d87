"""Errors is what the operator commands raise when they refuse: one line for the operator.

The ``reconcile`` CLI prints a ``CommandError`` as ``<command>: <message>`` on stderr and exits 1,
as karmadactl prints ``error: <message>``.
"""

from __future__ import annotations

__all__ = ["CommandError"]


class CommandError(Exception):
    """A command refused its input or could not finish; the message is one line for the operator."""
