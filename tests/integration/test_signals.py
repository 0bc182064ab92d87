"""A second SIGTERM stops the manager at once, cutting the grace period of a stuck reconcile.

Issue #15 item 1: the first signal begins a graceful stop (in-flight reconciles may take up to
``graceful_shutdown_timeout``, here 20 s); a second one, as docs/operations.md says, exits now.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from testenv import ControlPlane

pytestmark = pytest.mark.asyncio(loop_scope="session")

SLOW_MANAGER = Path(__file__).parent / "testdata" / "slow_manager.py"


async def _until(process: Process, marker: bytes, output: bytearray) -> None:
    assert process.stdout is not None
    while marker not in output:
        chunk = await process.stdout.receive()
        output.extend(chunk)


async def test_a_second_sigterm_exits_at_once_during_the_grace_period(
    host: ControlPlane, namespace: str
) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    argv = [sys.executable, str(SLOW_MANAGER), str(host.kubeconfig), namespace, "60"]
    output = bytearray()
    async with await anyio.open_process(argv, env=env) as process:
        with anyio.fail_after(60):
            await _until(process, b"manager started", output)
            await host.request(
                "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "a"}}
            )
            await _until(process, b"reconcile started", output)
            process.send_signal(signal.SIGTERM)
            await _until(process, b"manager stopping", output)
        # The stop now waits for the 60 s reconcile, up to the 20 s grace ...
        second = time.monotonic()
        process.send_signal(signal.SIGTERM)  # ... which the second signal cuts short
        with anyio.fail_after(10):
            await process.wait()
        took = time.monotonic() - second
        assert process.stdout is not None
        async for chunk in process.stdout:
            output.extend(chunk)
    text = output.decode(errors="replace")
    assert took < 3.0, f"exited {took:.1f} s after the second signal:\n{text}"
    assert "reconcile finished" not in text


async def test_a_stop_that_overruns_the_grace_period_ends_the_process(
    host: ControlPlane, namespace: str
) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    argv = [sys.executable, str(SLOW_MANAGER), str(host.kubeconfig), namespace, "60", "stubborn"]
    output = bytearray()
    async with await anyio.open_process(argv, env=env) as process:
        with anyio.fail_after(60):
            await _until(process, b"manager started", output)
            await host.request(
                "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "a"}}
            )
            await _until(process, b"reconcile started", output)
        stopped = time.monotonic()
        process.send_signal(signal.SIGTERM)  # the reconcile ignores the cancellation at 1 s
        with anyio.fail_after(15):
            code = await process.wait()
        took = time.monotonic() - stopped
        assert process.stdout is not None
        async for chunk in process.stdout:
            output.extend(chunk)
    text = output.decode(errors="replace")
    assert code == 1, text
    assert took < 1.0 + 1.0 + 2.0, f"exited {took:.1f} s after the signal:\n{text}"
    assert "stop overran graceful_shutdown_timeout" in text
    assert "reconcile finished" not in text
