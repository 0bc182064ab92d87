"""Gomod regenerates the wrapper Go modules testenv builds kube-apiserver, kubectl and etcd from.

k8s.io/kubernetes pins its staging modules (k8s.io/api, k8s.io/apiserver, ...) to v0.0.0 with local
``replace`` directives that a consuming module ignores, so ``go install
k8s.io/kubernetes/cmd/kube-apiserver@vX`` cannot resolve them. The wrapper requires
k8s.io/kubernetes and replaces every staging module with its published v0.<minor>.<patch> tag;
the list is read from k8s.io/kubernetes's own go.mod rather than written by hand. Only go.mod
and go.sum are committed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from testenv.binaries import TESTBIN, BuildError

__all__ = ["staging_replaces", "update_wrappers"]

_STAGING = re.compile(r"^\s*(k8s\.io/[\w.\-/]+)\s+=>\s+\./staging/", re.MULTILINE)


def _go(*args: str, cwd: Path) -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError("`go` is not on PATH")
    done = subprocess.run([go, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BuildError(f"go {' '.join(args)} failed:\n{done.stderr[-4000:]}")
    return done.stdout


def staging_replaces(kubernetes: str, *, cwd: Path) -> list[str]:
    """The staging modules k8s.io/kubernetes v``kubernetes`` replaces with local directories."""
    info = json.loads(_go("mod", "download", "-json", f"k8s.io/kubernetes@v{kubernetes}", cwd=cwd))
    return sorted(_STAGING.findall(Path(info["GoMod"]).read_text()))


def _write_module(directory: Path, go_mod: str, imports: list[str]) -> None:
    """Write go.mod, tidy it against a throw-away tools.go, and keep only go.mod and go.sum."""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        (work / "go.mod").write_text(go_mod)
        lines = "\n".join(f'\t_ "{path}"' for path in imports)
        (work / "tools.go").write_text(
            f"//go:build tools\n\npackage tools\n\nimport (\n{lines}\n)\n"
        )
        _go("mod", "tidy", cwd=work)
        directory.mkdir(parents=True, exist_ok=True)
        for name in ("go.mod", "go.sum"):
            shutil.copyfile(work / name, directory / name)


def update_wrappers(kubernetes: str, etcd: str, *, testbin: Path = TESTBIN) -> None:
    """Point the wrapper modules at Kubernetes v``kubernetes`` and etcd v``etcd``.

    Raises:
        BuildError: a ``go`` command failed (for example the proxy does not serve that version).
    """
    minor = kubernetes.split(".", 1)[1]
    with tempfile.TemporaryDirectory() as scratch:
        replaces = staging_replaces(kubernetes, cwd=Path(scratch))
    replace_block = "\n".join(f"\t{m} => {m} v0.{minor}" for m in replaces)
    apiserver_mod = (
        "module reconcile.local/testbin/kube-apiserver\n\ngo 1.26.0\n\n"
        f"require k8s.io/kubernetes v{kubernetes}\n\nreplace (\n{replace_block}\n)\n"
    )
    _write_module(
        testbin / "kube-apiserver",
        apiserver_mod,
        ["k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kubectl"],
    )
    etcd_mod = (
        "module reconcile.local/testbin/etcd\n\ngo 1.26.0\n\n"
        f"require go.etcd.io/etcd/server/v3 v{etcd}\n"
    )
    _write_module(testbin / "etcd", etcd_mod, ["go.etcd.io/etcd/server/v3"])
