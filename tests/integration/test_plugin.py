"""The pytest plugin as a user meets it: fixtures in a fresh project, --testenv-keep, no skips."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testenv import Binaries

INI = """
[pytest]
asyncio_mode = strict
asyncio_default_fixture_loop_scope = session
asyncio_default_test_loop_scope = session
"""

USER_TEST = """
import pytest

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_namespace_is_fresh(host, namespace):
    listed = await host.request("GET", f"/api/v1/namespaces/{namespace}/configmaps")
    # Only the root CA configmap publisher would add something, and testenv runs none.
    assert listed["items"] == []
    await host.request(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "mine"}}
    )


async def test_second_test_gets_another_namespace(host, namespace):
    listed = await host.request("GET", f"/api/v1/namespaces/{namespace}/configmaps")
    assert listed["items"] == []
"""


CONTROLLER_TEST = """
import pytest

from reconcile import GVK, Request, controller_managed_by
from testenv import eventually, running

pytestmark = pytest.mark.asyncio(loop_scope="session")
CONFIGMAP = GVK("", "v1", "ConfigMap")
MANAGERS = []


async def test_a_controller_runs_against_the_host(host, namespace, manager):
    MANAGERS.append(manager)
    async def reconcile(request: Request) -> None:
        if request.namespace != namespace:
            return
        cm = await manager.client.get(CONFIGMAP, request.name, namespace=namespace)
        await manager.client.patch(cm, {"metadata": {"labels": {"seen": "yes"}}})

    controller_managed_by(manager).for_(CONFIGMAP).complete(reconcile)
    async with running(manager):
        await host.request(
            "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "cm"}}
        )

        async def seen() -> bool:
            cm = await host.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/cm")
            return cm["metadata"].get("labels", {}).get("seen") == "yes"

        await eventually(seen, timeout=30)


async def test_each_test_gets_a_manager_of_its_own(manager):
    MANAGERS.append(manager)
    assert MANAGERS[0] is not MANAGERS[1]  # not the one the previous test ran and stopped
"""


def test_a_user_runs_a_manager_from_the_fixture_inside_the_test(
    binaries: Binaries, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_controller=CONTROLLER_TEST)
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(binaries.kube_apiserver.parent))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_fixtures_work_in_a_user_project_and_keep_leaves_it_running(
    binaries: Binaries, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_user=USER_TEST)
    # pytester gives the run its own HOME; point at the binaries the way setup-envtest users do.
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(binaries.kube_apiserver.parent))
    kept = pytester.path / ".testenv-keep"
    try:
        result = pytester.runpytest_subprocess("--testenv-keep", "-p", "no:cacheprovider")
        result.assert_outcomes(passed=2)
        assert f"reconcile testenv down --dir {kept}" in result.stdout.str()
        kubectl = str(binaries.kubectl)
        alive = subprocess.run(
            [kubectl, f"--kubeconfig={kept / 'host.kubeconfig'}", "get", "ns", "default"],
            capture_output=True,
            check=False,
            timeout=30,
        )
        assert alive.returncode == 0, alive.stderr
        pids = json.loads((kept / "testenv.json").read_text())["pids"]
        assert len(pids) == 2, "etcd and the host apiserver are recorded"
    finally:
        down = subprocess.run(
            [str(Path(sys.executable).parent / "reconcile"), "testenv", "down", "--dir", str(kept)],
            capture_output=True,
            check=False,
            timeout=60,
        )
    assert down.returncode == 0, down.stderr
    assert not (kept / "host.kubeconfig").exists()
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )


def test_missing_binaries_fail_the_test_instead_of_skipping(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_user=USER_TEST)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _run_without_binaries(pytester, empty)
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) == 0
    assert outcomes.get("errors", outcomes.get("error", 0)) == 2
    assert "control-plane binaries not found" in result.stdout.str()


def _run_without_binaries(pytester: pytest.Pytester, empty: Path) -> pytest.RunResult:
    # An empty assets directory and store: nothing to find anywhere.
    with pytest.MonkeyPatch.context() as patch:
        for name in ("TEST_ASSET_KUBE_APISERVER", "TEST_ASSET_ETCD", "TEST_ASSET_KUBECTL"):
            patch.delenv(name, raising=False)
        patch.setenv("KUBEBUILDER_ASSETS", str(empty))
        patch.setenv("XDG_DATA_HOME", str(empty))
        return pytester.runpytest_subprocess("-p", "no:cacheprovider")
