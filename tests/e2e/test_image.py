"""End to end: the controller-manager's OCI image, run against a testenv host and two members.

``make image`` (deploy/image/build.py) builds the image offline; this test runs what the image
holds, never the checkout: the controller-manager propagates a Deployment 2:1 and aggregates its
status, answers /healthz and /readyz, and exits 0 on SIGTERM within its graceful timeout; its
entrypoint also runs ``reconcile agent`` (deploy/agent's).

It runs under podman when podman can run containers here. On this machine it cannot (``crun:
setrlimit RLIMIT_NOFILE: Operation not permitted``: the sandbox may not set rlimits), so the
image's own root file system and config (the OCI runtime config umoci unpacks: user, env,
entrypoint) run in a mount namespace of their own: the root bind-mounted read-only, a tmpfs on
/tmp, the host network, as uid 65532 by ``chroot --userspec``. One process from exec to exit, so
SIGTERM reaches the controller-manager itself.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from reconcile import NotFound
from testenv import Environment, eventually
from testenv.ports import free_port
from tests.e2e.replicas import logged_process
from tests.e2e.stack import DEPLOYMENT, MEMBERS, client_of, new_deployment, new_policy

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

ROOT = Path(__file__).resolve().parents[2]
GRACEFUL = 40.0
"""deploy/controller-manager's terminationGracePeriodSeconds (the manager's own is 30 s)."""


def _run(*command: str | Path, timeout: float = 900) -> str:
    done = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=timeout, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(map(str, command))}: {done.returncode}\n{output}"
    return output


@pytest.fixture(scope="module")
def image() -> tuple[str, Path]:
    """The image's name and oci-archive (built by make image; cached by content)."""
    line = _run(sys.executable, ROOT / "deploy" / "image" / "build.py").strip().splitlines()[-1]
    _, name, archive, _ = line.split(" ", 3)
    return name, Path(archive)


@pytest.fixture(scope="module")
def bundle(image: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image unpacked as an OCI runtime bundle (config.json and rootfs/)."""
    work = tmp_path_factory.mktemp("image")
    layout = work / "layout"
    layout.mkdir()
    _run("tar", "-xf", image[1], "-C", layout)
    tag = image[0].partition(":")[2]
    _run("umoci", "unpack", "--image", f"{layout}:{tag}", work / "bundle")
    return work / "bundle"


def _podman_error(image: tuple[str, Path]) -> str | None:
    """Why podman cannot run the image here; None when it can."""
    if shutil.which("podman") is None:
        return "podman is not installed"
    loaded = subprocess.run(
        ["podman", "load", "-i", str(image[1])], capture_output=True, text=True, check=False
    )
    if loaded.returncode != 0:
        return loaded.stderr.strip()
    ran = subprocess.run(
        ["podman", "run", "--rm", "--network=host", "--read-only", image[0], "version"],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if ran.returncode == 0 else (ran.stderr.strip() or f"exit {ran.returncode}")


def _podman(image: str, config: Path, args: list[str]) -> list[str]:
    return ["podman", "run", "--rm", "--network=host", "--read-only", "--tmpfs=/tmp",
            f"--volume={config}:/config:ro", image, *args]  # fmt: skip


def _rootfs(bundle: Path, config: Path, args: list[str]) -> list[str]:
    """The image's entrypoint with ``args``, as its config says, on its read-only root."""
    spec: dict[str, Any] = json.loads((bundle / "config.json").read_text())
    process, rootfs = spec["process"], bundle / "rootfs"
    user = f"{process['user']['uid']}:{process['user']['gid']}"
    for point in ("proc", "config"):
        (rootfs / point).mkdir(exist_ok=True)
    mounts = "; ".join(
        [
            "set -e",
            f"mount --bind {rootfs} {rootfs}",
            f"mount -o remount,bind,ro {rootfs}",
            f"mount -t tmpfs -o size=16m,mode=1777 tmpfs {rootfs}/tmp",
            f"mount --bind /dev {rootfs}/dev",
            f"mount -t proc proc {rootfs}/proc",
            f"mount --bind -o ro {config} {rootfs}/config",
            'exec "$@"',
        ]
    )
    chroot = shutil.which("chroot") or "/usr/sbin/chroot"
    entry = ["env", "-i", *process["env"], chroot, f"--userspec={user}", str(rootfs)]
    return ["unshare", "--mount", "--", "sh", "-c", mounts, "image", *entry,
            *process["args"], *args]  # fmt: skip


async def _ok(url: str) -> bool:
    try:
        async with aiohttp.ClientSession() as http, http.get(url) as answer:
            return answer.status == 200
    except aiohttp.ClientError:
        return False


async def test_the_image_propagates_a_deployment_and_stops_on_sigterm(
    joined: Environment,
    namespace: str,
    image: tuple[str, Path],
    bundle: Path,
    tmp_path: Path,
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    shutil.copy(joined.host.kubeconfig, config / "host.kubeconfig")
    for path in (config, config / "host.kubeconfig"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    probes = free_port()
    args = [
        "controller-manager",
        "--kubeconfig=/config/host.kubeconfig",
        "--leader-elect",
        f"--leader-elect-resource-namespace={namespace}",
        "--metrics-bind-address=0",
        f"--health-probe-bind-address=127.0.0.1:{probes}",
    ]
    podman = _podman_error(image)
    command = _podman(image[0], config, args) if podman is None else _rootfs(bundle, config, args)
    log = tmp_path / "controller-manager.log"
    async with logged_process(command, log) as process:
        try:
            await _propagates(joined, namespace, probes)
            process.send_signal(signal.SIGTERM)
            with anyio.fail_after(GRACEFUL):
                status = await process.wait()
        except BaseException:
            print(f"podman: {podman or 'ran it'}\n{log.read_text()[-6000:]}")
            raise
    assert status == 0, log.read_text()[-3000:]


async def test_the_image_runs_reconcile_agent(
    image: tuple[str, Path], bundle: Path, tmp_path: Path
) -> None:
    # deploy/agent and charts/reconcile-agent run the same image with `agent` arguments.
    args = ["agent", "--help"]
    podman = _podman_error(image)
    command = (
        _podman(image[0], tmp_path, args) if podman is None else _rootfs(bundle, tmp_path, args)
    )
    done = await anyio.run_process(command, check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    for flag in (b"--cluster-name", b"--karmada-kubeconfig", b"--leader-elect"):
        assert flag in done.stdout


async def _propagates(env: Environment, namespace: str, probes: int) -> None:
    base = f"http://127.0.0.1:{probes}"
    for path in ("/healthz", "/readyz"):
        url = base + path
        await eventually(lambda: _ok(url), timeout=120, interval=0.5)  # noqa: B023 - awaited here
    host = await client_of(env.host)
    members = {name: await client_of(env.members[name]) for name in MEMBERS}
    try:
        await host.create(new_deployment("web", namespace, 3))
        await host.create(new_policy("web", namespace, "web"))

        async def spread() -> dict[str, int] | None:
            found = {}
            for name, member in members.items():
                try:
                    copy = await member.get(DEPLOYMENT, "web", namespace=namespace)
                except NotFound:
                    return None
                found[name] = int(copy["spec"]["replicas"])
            return found

        assert await eventually(spread, timeout=120, interval=0.5) == {"member1": 2, "member2": 1}
        for member in members.values():
            copy = await member.get(DEPLOYMENT, "web", namespace=namespace)
            replicas = copy["spec"]["replicas"]
            ready = dict.fromkeys(
                ("replicas", "readyReplicas", "updatedReplicas", "availableReplicas"), replicas
            )
            copy["status"] = {"observedGeneration": copy["metadata"]["generation"], **ready}
            await member.update_status(copy)

        async def aggregated() -> bool:
            template = await host.get(DEPLOYMENT, "web", namespace=namespace)
            return (template.get("status") or {}).get("readyReplicas") == 3

        await eventually(aggregated, timeout=120, interval=0.5)
    finally:
        for client in (host, *members.values()):
            await client.close()
