"""`reconcile run MODULE:FUNCTION`: a user's controllers on a real apiserver, stopped by SIGTERM."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import anyio
import pytest

from testenv import ControlPlane, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

RECONCILE = Path(sys.executable).parent / "reconcile"

USER_MODULE = """
import os

from reconcile import GVK, Manager, Request, controller_managed_by

CONFIGMAP = GVK("", "v1", "ConfigMap")
NAMESPACE = os.environ["WATCHED_NAMESPACE"]


async def setup(manager: Manager) -> None:
    async def reconcile(request: Request) -> None:
        if request.namespace != NAMESPACE:
            return
        cm = await manager.client.get(CONFIGMAP, request.name, namespace=NAMESPACE)
        await manager.client.patch(cm, {"metadata": {"labels": {"seen": "yes"}}})

    controller_managed_by(manager).for_(CONFIGMAP).complete(reconcile)
"""


async def test_run_sets_up_the_users_controllers_and_stops_on_sigterm(
    host: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    (tmp_path / "usercontroller.py").write_text(USER_MODULE)
    argv = [
        str(RECONCILE),
        "run",
        "usercontroller:setup",
        f"--kubeconfig={host.kubeconfig}",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
        "--leader-elect",
        "--leader-election-id=usercontroller",
        f"--leader-elect-resource-namespace={namespace}",
    ]
    env = {"WATCHED_NAMESPACE": namespace, "PATH": "/usr/bin:/bin"}
    async with await anyio.open_process(argv, cwd=tmp_path, env=env) as process:
        await host.request(
            "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "cm"}}
        )

        async def seen() -> bool:
            cm = await host.request("GET", f"/api/v1/namespaces/{namespace}/configmaps/cm")
            return bool(cm["metadata"].get("labels", {}).get("seen") == "yes")

        await eventually(seen, timeout=60)
        lease = await host.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/usercontroller"
        )
        assert lease["spec"]["holderIdentity"]
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(30):
            code = await process.wait()
        assert process.stderr is not None
        errors = (await process.stderr.receive()).decode() if code else ""
    assert code == 0, errors


async def test_a_target_that_names_nothing_is_exit_2_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "usercontroller.py").write_text("VALUE = 1\n")
    for target, reason in [
        ("usercontroller", "is not MODULE:FUNCTION"),
        ("usercontroller:setup", "usercontroller has no function 'setup'"),
        ("nosuchmodule:setup", "No module named 'nosuchmodule'"),
    ]:
        done = await anyio.run_process([str(RECONCILE), "run", target], cwd=tmp_path, check=False)
        assert done.returncode == 2, target
        assert reason in done.stderr.decode(), done.stderr.decode()
