"""State records a running testenv in a directory so another process can use it and stop it.

The directory holds ``<cluster>.kubeconfig`` for every cluster (the host is ``host``) and
``testenv.json`` with the process ids to signal and the control planes' temporary directory.
``reconcile testenv up`` records its own pid; ``pytest --testenv-keep`` records etcd's and the
apiservers'. ``reconcile testenv down --dir D`` reads it back, stops them and cleans up.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

from testenv.environment import Environment
from testenv.process import pid_alive

__all__ = ["STATE_FILE", "clear_state", "save_state", "stop_recorded", "write_kubeconfigs"]

STATE_FILE = "testenv.json"


def write_kubeconfigs(env: Environment, directory: Path) -> dict[str, Path]:
    """Copy each cluster's admin kubeconfig to ``directory/<name>.kubeconfig``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, plane in env.clusters.items():
        target = directory / f"{name}.kubeconfig"
        shutil.copyfile(plane.kubeconfig, target)
        target.chmod(0o600)
        written[name] = target
    return written


def save_state(env: Environment, directory: Path, *, pids: list[int] | None = None) -> Path:
    """Write kubeconfigs and ``testenv.json`` for ``env``; by default its programs' pids."""
    write_kubeconfigs(env, directory)
    if pids is None:
        processes = [p.apiserver.process for p in env.clusters.values()]
        if env.etcd is not None:
            processes.append(env.etcd.process)
        pids = [p.pid for p in processes if p.pid is not None]
        owned = str(env.directory) if env.directory else None
    else:
        owned = None
    record = {"pids": pids, "directory": owned, "clusters": sorted(env.clusters)}
    (directory / STATE_FILE).write_text(json.dumps(record, indent=2))
    return directory


def stop_recorded(directory: Path, *, timeout: float = 30.0) -> list[int]:
    """Stop the recorded processes in order (apiservers before their etcd), remove the record.

    Each gets SIGTERM and, if still running after ``timeout`` seconds, SIGKILL.

    Raises:
        FileNotFoundError: ``directory`` holds no testenv record.
    """
    record = json.loads((directory / STATE_FILE).read_text())
    pids: list[int] = [pid for pid in record["pids"] if pid_alive(pid)]
    for pid in pids:
        _terminate(pid, timeout)
    if record.get("directory"):
        shutil.rmtree(record["directory"], ignore_errors=True)
    clear_state(directory)
    return pids


def _terminate(pid: int, timeout: float) -> None:
    # An apiserver whose etcd is gone hangs in shutdown; hence one at a time, in record order.
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)


def clear_state(directory: Path) -> None:
    """Remove the record and the kubeconfigs it lists (they point at stopped servers)."""
    try:
        record = json.loads((directory / STATE_FILE).read_text())
    except FileNotFoundError:
        return
    for name in record.get("clusters", []):
        (directory / f"{name}.kubeconfig").unlink(missing_ok=True)
    (directory / STATE_FILE).unlink(missing_ok=True)
