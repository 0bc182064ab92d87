"""Flags are how the controller-manager's options meet its command line.

Each options dataclass of ``reconcile controller-manager`` owns its flags, the shape Karmada's
options have (``AddFlags``, ``Validate``): ``add_flags(flags)`` registers them, names, defaults
and help, on a parser or an argument group, and ``from_args(namespace)`` builds the options from
the parsed flags, validating them (a ``ValueError`` names the flag). ``controllers.cli`` calls
only these two for each. A flag two options read (``--leader-elect``, which sharding needs too)
is registered by one of them and read by name by the other.
"""

from __future__ import annotations

import argparse
from typing import Protocol, Self, TypeAlias

__all__ = ["FlagSet", "OwnsFlags", "go_bool"]

FlagSet: TypeAlias = argparse.ArgumentParser | argparse._ArgumentGroup
"""Where flags are registered: a (sub)parser or one of its argument groups."""


class OwnsFlags(Protocol):
    """Options that register their own flags and are built from them."""

    @classmethod
    def add_flags(cls, flags: FlagSet) -> None:
        """Register the options' flags on ``flags``."""
        ...

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Self:
        """The options the flags ``add_flags`` registered set.

        Raises:
            ValueError: a flag's value is not valid for the options.
        """
        ...


def go_bool(text: str) -> bool:
    """A Go flag's boolean (an argparse ``type``): ``--metrics-secure=false`` as kubebuilder's
    scaffold takes it.

    Raises:
        argparse.ArgumentTypeError: neither true nor false.
    """
    value = text.strip().lower()
    if value in ("1", "t", "true"):
        return True
    if value in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {text!r} (true or false)")
