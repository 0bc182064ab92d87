"""Binary lookup follows envtest's order, so setup-envtest users need nothing from us."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testenv import (
    BinaryNotFound,
    BuildError,
    find_binaries,
    install_binaries,
    kubernetes_version,
    store_dir,
)
from testenv.binaries import _ldflags


def _fake_binaries(
    directory: Path, names: tuple[str, ...] = ("kube-apiserver", "etcd", "kubectl")
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = directory / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    return directory


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No real binaries visible: an empty XDG store and no envtest variables."""
    for name in (
        "KUBEBUILDER_ASSETS",
        "TEST_ASSET_KUBE_APISERVER",
        "TEST_ASSET_ETCD",
        "TEST_ASSET_KUBECTL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr("testenv.binaries.FALLBACK_DIR", tmp_path / "usr-local-kubebuilder")
    return tmp_path


def test_missing_binaries_raise_with_a_remedy(isolated: Path) -> None:
    with pytest.raises(BinaryNotFound, match="reconcile testenv install"):
        find_binaries()


def test_store_path_is_setup_envtests(isolated: Path) -> None:
    expected = (
        isolated / "xdg" / "kubebuilder-envtest" / "k8s" / f"{kubernetes_version()}-linux-amd64"
    )
    assert store_dir() == expected


def test_store_is_found(isolated: Path) -> None:
    _fake_binaries(store_dir())
    assert find_binaries().kube_apiserver == store_dir() / "kube-apiserver"


def test_newest_other_store_version_is_used(isolated: Path) -> None:
    root = store_dir().parent
    _fake_binaries(root / "1.9.0-linux-amd64")
    _fake_binaries(root / "1.30.1-linux-amd64")
    assert find_binaries().etcd == root / "1.30.1-linux-amd64" / "etcd"


def test_kubebuilder_assets_beats_the_store(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_binaries(store_dir())
    assets = _fake_binaries(isolated / "assets")
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(assets))
    assert find_binaries().kubectl == assets / "kubectl"


def test_test_asset_variable_beats_everything(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assets = _fake_binaries(isolated / "assets")
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(assets))
    special = _fake_binaries(isolated / "special", ("etcd",)) / "etcd"
    monkeypatch.setenv("TEST_ASSET_ETCD", str(special))
    found = find_binaries()
    assert found.etcd == special
    assert found.kube_apiserver == assets / "kube-apiserver"


def test_fallback_directory_is_last(isolated: Path) -> None:
    fallback = _fake_binaries(isolated / "usr-local-kubebuilder")
    assert find_binaries().kube_apiserver == fallback / "kube-apiserver"


def test_non_executable_files_are_ignored(isolated: Path) -> None:
    _fake_binaries(store_dir())
    os.chmod(store_dir() / "etcd", 0o644)
    with pytest.raises(BinaryNotFound, match="etcd"):
        find_binaries()


def test_version_ldflags_name_the_release() -> None:
    flags = _ldflags("1.37.2")
    assert "-X k8s.io/component-base/version.gitVersion=v1.37.2" in flags
    assert "-X k8s.io/component-base/version.gitMinor=37" in flags


def test_wrapper_replaces_every_staging_module_at_the_matching_tag() -> None:
    go_mod = (
        Path(__file__).parents[2] / "testenv" / "testbin" / "kube-apiserver" / "go.mod"
    ).read_text()
    minor = kubernetes_version().split(".", 1)[1]
    replaces = [line.split() for line in go_mod.splitlines() if "=>" in line]
    assert len(replaces) >= 30
    assert all(r[0] == r[2] and r[3] == f"v0.{minor}" for r in replaces)
    assert any(r[0] == "k8s.io/apiserver" for r in replaces)


def test_missing_binary_without_go_says_where_it_looked_and_what_to_do(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(isolated / "no-tools-here"))
    with pytest.raises(BuildError) as caught:
        install_binaries()
    message = str(caught.value)
    assert str(store_dir()) in message
    assert "usr-local-kubebuilder" in message
    assert "`go` is not on PATH" in message
    assert "KUBEBUILDER_ASSETS" in message
    assert "TEST_ASSET_KUBE_APISERVER" in message
