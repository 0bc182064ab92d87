"""Environment lifecycle: clean stop, failed start, interruption, and the testenv up/down CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from testenv import Binaries, Environment, StartError, eventually
from testenv.process import pid_alive

pytestmark = pytest.mark.asyncio(loop_scope="session")

HOLD = Path(__file__).parent / "testdata" / "hold_environment.py"


async def _gone(pids: list[int]) -> bool:
    return not any(pid_alive(pid) for pid in pids)


async def test_stop_leaves_no_process_and_no_directory() -> None:
    async with Environment(members=["solo"]) as env:
        assert env.etcd is not None
        assert env.directory is not None
        pids = [p.apiserver.process.pid for p in env.clusters.values()] + [env.etcd.process.pid]
        directory = env.directory
        assert set(env.clusters) == {"host", "solo"}
        assert all(pid is not None and pid_alive(pid) for pid in pids)
    assert await eventually(lambda: _gone([p for p in pids if p]), timeout=5)
    assert not directory.exists()


async def test_failed_start_stops_etcd_and_says_why() -> None:
    env = Environment(apiserver_flags={"no-such-flag": "1"}, start_timeout=30)
    with pytest.raises(StartError, match="no-such-flag"):
        await env.start()
    assert env.etcd is None
    assert env.clusters == {}
    assert env.directory is None


@pytest.mark.parametrize(
    ("how", "signum"),
    [("interrupted", signal.SIGINT), ("killed outright", signal.SIGKILL)],
    ids=["sigint-stops-cleanly", "sigkill-children-die-with-parent"],
)
async def test_no_orphans_when_the_owner_is_interrupted(how: str, signum: signal.Signals) -> None:
    proc = await anyio.open_process([sys.executable, str(HOLD)], stderr=subprocess.STDOUT)
    async with proc:
        assert proc.stdout is not None
        with anyio.fail_after(90):
            line = await proc.stdout.receive()
        started = json.loads(line.decode().splitlines()[0])
        assert all(pid_alive(pid) for pid in started["pids"]), how
        proc.send_signal(signum)
        with anyio.fail_after(30):
            await proc.wait()
    assert await eventually(lambda: _gone(started["pids"]), timeout=10)
    if signum == signal.SIGINT:
        assert not Path(started["directory"]).exists()


async def test_cli_up_writes_kubeconfigs_and_down_stops_it(
    binaries: Binaries, tmp_path: Path
) -> None:
    reconcile = Path(sys.executable).parent / "reconcile"
    up = await anyio.open_process(
        [str(reconcile), "testenv", "up", "--members", "member1", "--dir", str(tmp_path)]
    )
    async with up:

        async def recorded() -> bool:
            return (tmp_path / "testenv.json").exists()

        assert await eventually(recorded, timeout=90)
        for name in ("host", "member1"):
            kubeconfig = tmp_path / f"{name}.kubeconfig"
            assert kubeconfig.stat().st_mode & 0o077 == 0, "kubeconfig must be private"
            kubectl = binaries.kubectl
            result = await anyio.run_process(
                [str(kubectl), f"--kubeconfig={kubeconfig}", "get", "namespace", "default"]
            )
            assert b"default" in result.stdout
        down = await anyio.run_process(
            [str(reconcile), "testenv", "down", "--dir", str(tmp_path)], check=False
        )
        assert down.returncode == 0, down.stderr
        with anyio.fail_after(30):
            assert await up.wait() == 0
    assert not (tmp_path / "host.kubeconfig").exists()
    assert not (tmp_path / "testenv.json").exists()
