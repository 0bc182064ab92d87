"""Process runs one control-plane program (etcd, kube-apiserver) and guarantees it is stopped.

Children are started with a parent-death signal, so they die with the test process even when it is
killed outright; stop() sends SIGTERM and escalates to SIGKILL after a grace period. Output goes
to a log file whose tail is quoted when the program fails to start, unless attach_output shows it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import IO, Final

import anyio

__all__ = [
    "ControlPlaneProcess",
    "StartError",
    "attach_output_default",
    "pid_alive",
    "start_timeout_default",
]

_PR_SET_PDEATHSIG: Final = 1
_POLL_INTERVAL: Final = 0.1
STOP_GRACE: Final = 10.0


class StartError(RuntimeError):
    """A control-plane program exited or did not become ready in time; the log tail is attached."""


def start_timeout_default() -> float:
    """Readiness timeout: ``KUBEBUILDER_CONTROLPLANE_START_TIMEOUT`` (a Go duration), else 60 s."""
    raw = os.environ.get("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT")
    if not raw:
        return 60.0
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for suffix in ("ms", "s", "m", "h"):
        if raw.endswith(suffix) and raw[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(raw[: -len(suffix)]) * units[suffix]
    return float(raw)


def attach_output_default() -> bool:
    """Whether ``KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT`` asks to show control-plane output."""
    return os.environ.get("KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT", "").lower() in ("1", "true")


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (exited, not yet reaped by whoever adopted it) does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    # The state follows the parenthesised command name, which may itself contain spaces.
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: ask the kernel to SIGKILL it when our thread exits.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ControlPlaneProcess:
    """One running program with a readiness check and a guaranteed stop."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        attach_output: bool = False,
        persistent: bool = False,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.attach_output = attach_output
        self.persistent = persistent
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The process id while running."""
        return self._proc.pid if self._proc else None

    def running(self) -> bool:
        """Whether the program was started and has not exited."""
        return self._proc is not None and self._proc.poll() is None

    async def start(self, ready: Callable[[], Awaitable[bool]], *, timeout: float) -> None:
        """Start the program and wait until ``ready()`` is true.

        Raises:
            StartError: the program exited or stayed unready for ``timeout`` seconds; it is stopped.
        """
        output: IO[bytes] | None = None
        if not self.attach_output:
            output = self._log = self.log_path.open("ab")
        self._proc = subprocess.Popen(  # noqa: ASYNC220 - returns at once; the wait is async
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT if output else None,
            # A persistent program (kept for debugging) must survive us and our terminal's Ctrl-C.
            preexec_fn=None if self.persistent else _die_with_parent,
            start_new_session=self.persistent,
        )
        try:
            await self._wait_ready(ready, timeout)
        except BaseException:
            await self.stop()
            raise

    async def _wait_ready(self, ready: Callable[[], Awaitable[bool]], timeout: float) -> None:
        with anyio.move_on_after(timeout):
            while True:
                if not self.running():
                    raise StartError(f"{self.name} exited during start-up:\n{self.log_tail()}")
                if await ready():
                    return
                await anyio.sleep(_POLL_INTERVAL)
        raise StartError(f"{self.name} was not ready after {timeout:.0f}s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        """The last lines the program wrote (empty when its output is attached)."""
        if self.attach_output or not self.log_path.exists():
            return "(output attached to the terminal)"
        text = self.log_path.read_bytes().decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """SIGTERM, wait up to ``grace`` seconds, then SIGKILL. Safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None:
            with anyio.CancelScope(shield=True):
                await _terminate(proc, grace)
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill_now(self) -> None:
        """Synchronous last resort for interpreter exit: SIGKILL and reap."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


async def _terminate(proc: subprocess.Popen[bytes], grace: float) -> None:
    if proc.poll() is None:
        proc.terminate()
    with anyio.move_on_after(grace):
        while proc.poll() is None:
            await anyio.sleep(_POLL_INTERVAL)
    if proc.poll() is None:
        proc.kill()
        await anyio.to_thread.run_sync(proc.wait)
