"""Duration parses the Go durations the command line takes (``30s``, ``1m30s``, ``500ms``).

Karmada's and client-go's flags are Go ``time.Duration`` values; the same spellings work here,
and so does a plain number of seconds.
"""

from __future__ import annotations

import argparse
import re
from typing import Final

__all__ = ["parse_duration"]

_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s)")
_SECONDS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text: str) -> float:
    """Seconds from a Go duration or a plain number of seconds (an argparse ``type``).

    Raises:
        argparse.ArgumentTypeError: ``text`` is neither.
    """
    try:
        return float(text)
    except ValueError:
        pass
    parts = _PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 30s, 1m, 500ms)")
    return sum(float(number) * _SECONDS[unit] for number, unit in parts)
