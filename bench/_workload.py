"""The benchmarks' workload: ConfigMaps of about 2 KB, a round annotation, process figures.

Standard library only, so a peer's child process (kopf) can use it without importing reconcile
(whose imports would count in the peer's memory).
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

__all__ = [
    "NAMESPACE",
    "ROUND_ANNOTATION",
    "Tally",
    "configmap",
    "cpu_seconds",
    "name_of_index",
    "rss_kib",
    "say",
]

NAMESPACE: Final = "bench"
ROUND_ANNOTATION: Final = "bench.reconcile.io/round"
"""Which touch round an object is at: "1" when created, then one more per touch."""
DATA_KEYS: Final = 4
VALUE_SIZE: Final = 512


def name_of_index(index: int) -> str:
    """The name of the ``index``-th ConfigMap."""
    return f"cm-{index:05d}"


def configmap(index: int, namespace: str = NAMESPACE) -> dict[str, Any]:
    """A ConfigMap of about 2 KB: ``DATA_KEYS`` values of ``VALUE_SIZE`` characters."""
    name = name_of_index(index)
    data = {f"key-{k}": (f"{name}-{k}-" * VALUE_SIZE)[:VALUE_SIZE] for k in range(DATA_KEYS)}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": "bench", "shard": str(index % 16)},
            "annotations": {ROUND_ANNOTATION: "1"},
        },
        "data": data,
    }


def rss_kib(pid: int | str = "self") -> tuple[int, int]:
    """(resident set size, its peak so far) of a process, in KiB, from /proc/<pid>/status."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields["VmRSS"], fields["VmHWM"]


def cpu_seconds(pid: int | str = "self") -> float:
    """User + system CPU seconds a process has used so far, from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    # Counting from the state (field 3 of stat(5)): utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def say(*parts: object) -> None:
    """One line for the parent process on stdout, flushed at once."""
    print(*parts, flush=True)


class Tally:
    """Which objects a contender handled at which round; says ``DONE`` when a round is complete.

    The line is ``DONE <round> <time.monotonic()> <calls so far>``; the monotonic clock is
    system-wide on Linux, so the parent compares it with its own.
    """

    def __init__(self, objects: int) -> None:
        self.objects = objects
        self.seen: defaultdict[str, set[str]] = defaultdict(set)
        self.calls = 0

    def note(self, name: str, annotations: Mapping[str, str] | None) -> None:
        """One reconcile (or handler call) of ``name`` that saw these annotations."""
        self.calls += 1
        round_ = (annotations or {}).get(ROUND_ANNOTATION, "?")
        names = self.seen[round_]
        if name in names:
            return
        names.add(name)
        if len(names) == self.objects:
            say("DONE", round_, time.monotonic(), self.calls)
