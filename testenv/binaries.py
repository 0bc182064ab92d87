"""Binaries locates kube-apiserver, etcd and kubectl for testenv, building them when none exist.

Lookup follows envtest, so users of setup-envtest need nothing: ``TEST_ASSET_<NAME>``, then
``$KUBEBUILDER_ASSETS/<name>``, then the setup-envtest store
(``$XDG_DATA_HOME/kubebuilder-envtest/k8s/<version>-<os>-<arch>/``), then
``/usr/local/kubebuilder/bin``.
Machines that cannot download prebuilt binaries build the upstream main packages from the Go module
proxy through the wrapper modules in ``testenv/testbin`` and install them into the store.
"""

from __future__ import annotations

import fcntl
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "BINARY_NAMES",
    "Binaries",
    "BinaryNotFound",
    "BuildError",
    "find_binaries",
    "find_helm",
    "install_binaries",
    "install_helm",
    "kubernetes_version",
    "store_dir",
]

BINARY_NAMES: Final = ("kube-apiserver", "etcd", "kubectl")
TESTBIN: Final = Path(__file__).parent / "testbin"
FALLBACK_DIR: Final = Path("/usr/local/kubebuilder/bin")

Progress = Callable[[str], None]


class BinaryNotFound(FileNotFoundError):
    """A control-plane binary is in none of the places envtest looks, and was not built."""


class BuildError(RuntimeError):
    """Building a control-plane binary from the Go module proxy failed; carries the go output."""


@dataclass(frozen=True)
class Binaries:
    """Paths of the three programs a testenv control plane runs."""

    kube_apiserver: Path
    etcd: Path
    kubectl: Path


def _required_version(module_dir: Path, module: str) -> str:
    text = (module_dir / "go.mod").read_text()
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+v(\S+)", text, re.MULTILINE)
    if match is None:
        raise BuildError(f"{module_dir / 'go.mod'} does not require {module}")
    return match.group(1)


def kubernetes_version() -> str:
    """The Kubernetes release testenv builds, as pinned by its kube-apiserver wrapper module."""
    return _required_version(TESTBIN / "kube-apiserver", "k8s.io/kubernetes")


def _platform() -> str:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return f"{platform.system().lower()}-{arch}"


def store_dir(version: str | None = None) -> Path:
    """The setup-envtest store directory for ``version`` (default: the version testenv builds)."""
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return (
        Path(data)
        / "kubebuilder-envtest"
        / "k8s"
        / f"{version or kubernetes_version()}-{_platform()}"
    )


def _version_key(directory: Path) -> tuple[int, ...]:
    numbers = re.findall(r"\d+", directory.name.split("-")[0])
    return tuple(int(n) for n in numbers)


def _store_candidates() -> Iterator[Path]:
    # Prefer the version we build, then the newest other version a setup-envtest user installed.
    yield store_dir()
    root = store_dir().parent
    if root.is_dir():
        others = [d for d in root.iterdir() if d.name.endswith(_platform()) and d != store_dir()]
        yield from sorted(others, key=_version_key, reverse=True)


def _env_name(name: str) -> str:
    return "TEST_ASSET_" + name.upper().replace("-", "_")


def _places() -> list[Path]:
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    return [*([Path(assets)] if assets else []), *_store_candidates(), FALLBACK_DIR]


def _lookup(name: str) -> Path | None:
    explicit = os.environ.get(_env_name(name))
    if explicit:
        return Path(explicit)
    for place in _places():
        if (place / name).is_file() and os.access(place / name, os.X_OK):
            return place / name
    return None


def _where_looked(names: list[str]) -> str:
    variables = ", ".join(_env_name(n) for n in names)
    places = "\n".join(f"  - {place}" for place in _places())
    return f"looked in ${variables}, then:\n{places}"


def find_binaries() -> Binaries:
    """Locate the binaries by envtest's lookup order.

    Raises:
        BinaryNotFound: naming every missing program, where it looked and how to provide it.
    """
    found = {name: _lookup(name) for name in BINARY_NAMES}
    missing = [name for name, path in found.items() if path is None or not path.is_file()]
    if missing:
        raise BinaryNotFound(
            f"control-plane binaries not found: {', '.join(missing)}; {_where_looked(missing)}\n"
            "Provide them with `reconcile testenv install` (builds them from the Go module proxy;"
            " needs Go), with setup-envtest (`setup-envtest use`), or by pointing"
            " KUBEBUILDER_ASSETS or TEST_ASSET_<NAME> at existing ones."
        )
    paths = {name: path for name, path in found.items() if path is not None}
    return Binaries(paths["kube-apiserver"], paths["etcd"], paths["kubectl"])


def install_binaries(*, progress: Progress | None = None, force: bool = False) -> Binaries:
    """Return the binaries, building the missing ones into the setup-envtest store first.

    Idempotent: programs already found by the lookup are not rebuilt unless ``force``. A file lock
    keeps two concurrent installs (parallel ``make`` runs) from building twice.

    Raises:
        BuildError: ``go`` is missing or a build failed; the message holds the tail of its output.
    """
    say = progress or (lambda _message: None)
    if not force:
        try:
            return find_binaries()
        except BinaryNotFound:
            pass
    target = store_dir()
    target.mkdir(parents=True, exist_ok=True)
    with _locked(target / ".build.lock"):
        for name in BINARY_NAMES:
            if force or not (target / name).is_file() or _lookup(name) is None:
                _build(name, target, say)
    return find_binaries()


def find_helm() -> Path:
    """Locate helm as the control-plane binaries are located (``TEST_ASSET_HELM``,
    ``KUBEBUILDER_ASSETS``, the setup-envtest store).

    Raises:
        BinaryNotFound: where it looked and how to provide it.
    """
    found = _lookup("helm")
    if found is None or not found.is_file():
        raise BinaryNotFound(
            f"helm not found; {_where_looked(['helm'])}\nProvide it with `reconcile testenv "
            "install --helm` (builds helm.sh/helm/v4 from the Go module proxy; needs Go)."
        )
    return found


def install_helm(*, progress: Progress | None = None) -> Path:
    """Return helm, building the version testbin/helm/go.mod pins into the setup-envtest store
    first when it is missing (the charts' tests run it; it is kept beside kubectl).

    Raises:
        BuildError: ``go`` is missing or the build failed.
    """
    try:
        return find_helm()
    except BinaryNotFound:
        pass
    target = store_dir()
    target.mkdir(parents=True, exist_ok=True)
    with _locked(target / ".build.lock"):
        if _lookup("helm") is None:
            _build("helm", target, progress or (lambda _message: None))
    return find_helm()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _ldflags(version: str) -> str:
    major, minor = version.split(".")[:2]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {package}.gitVersion=v{version}",
            f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
        ]
    return " ".join(flags)


def _build_plan(name: str) -> tuple[Path, str, list[str]]:
    """The wrapper module, the main package and the extra go build flags for one binary."""
    if name == "etcd":
        return TESTBIN / "etcd", "go.etcd.io/etcd/server/v3", []
    if name == "helm":
        return TESTBIN / "helm", "helm.sh/helm/v4/cmd/helm", ["-ldflags", "-s -w"]
    version = kubernetes_version()
    flags = ["-tags", "selinux,notest", "-ldflags", _ldflags(version)]
    return TESTBIN / "kube-apiserver", f"k8s.io/kubernetes/cmd/{name}", flags


def _go_env() -> dict[str, str]:
    return {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}


def _build(name: str, target: Path, say: Progress) -> None:
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            f"{name} was not found ({_where_looked([name])}) and `go` is not on PATH to build it."
            " Install Go >= 1.26, or provide the binary through setup-envtest, KUBEBUILDER_ASSETS"
            f" or {_env_name(name)}."
        )
    module_dir, package, flags = _build_plan(name)
    total = _count_packages(go, module_dir, package)
    say(f"building {name} from {package} ({total} packages; a cold build takes many minutes)")
    with tempfile.TemporaryDirectory(dir=target) as scratch:
        output = Path(scratch) / name
        argv = [go, "build", "-v", "-trimpath", *flags, "-o", str(output), package]
        _run_go_build(argv, module_dir, name, total, say)
        output.replace(target / name)
    say(f"installed {target / name}")


def _count_packages(go: str, module_dir: Path, package: str) -> int:
    listed = subprocess.run(
        [go, "list", "-deps", package],
        cwd=module_dir,
        env=_go_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:
        raise BuildError(f"go list {package} failed:\n{listed.stderr[-4000:]}")
    return len(listed.stdout.split())


def _run_go_build(argv: list[str], cwd: Path, name: str, total: int, say: Progress) -> None:
    started = time.monotonic()
    last_report = started
    compiled = 0
    tail: list[str] = []
    # go build -v prints one line per package it compiles; count them for a progress figure.
    with subprocess.Popen(
        argv, cwd=cwd, env=_go_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            compiled += 1
            tail = [*tail[-40:], line.rstrip()]
            if time.monotonic() - last_report >= 15:
                last_report = time.monotonic()
                elapsed = int(last_report - started)
                say(f"  {name}: {compiled}/{total} packages compiled, {elapsed}s elapsed")
    if proc.returncode != 0:
        raise BuildError(f"go build {name} failed (exit {proc.returncode}):\n" + "\n".join(tail))
    say(f"  {name}: built in {int(time.monotonic() - started)}s")
