"""testenv against the real kube-apiserver: objects, watches, CRDs, conflicts, RBAC, kubectl."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from testenv import Binaries, ControlPlane, RequestError, eventually
from testenv.kubeconfig import load_api_client

pytestmark = pytest.mark.asyncio(loop_scope="session")

RBAC_GROUP = "rbac.authorization.k8s.io"
CRD_FILE = Path(__file__).parent / "testdata" / "crontab-crd.yaml"


def _configmap(name: str, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)


async def test_configmap_create_get_list_through_kubernetes_asyncio(
    host: ControlPlane, namespace: str
) -> None:
    core = client.CoreV1Api(host.api_client)
    created = await core.create_namespaced_config_map(namespace, _configmap("one", colour="red"))
    assert created.metadata.uid
    got = await core.read_namespaced_config_map("one", namespace)
    assert got.data == {"colour": "red"}
    listed = await core.list_namespaced_config_map(namespace)
    assert [item.metadata.name for item in listed.items] == ["one"]


async def test_watch_delivers_added_modified_deleted_in_order(
    host: ControlPlane, namespace: str
) -> None:
    core = client.CoreV1Api(host.api_client)
    start = (await core.list_namespaced_config_map(namespace)).metadata.resource_version
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        # Watching from the list's resourceVersion replays whatever happened after it, in order.
        stream = watch.Watch().stream(
            core.list_namespaced_config_map, namespace, resource_version=start, timeout_seconds=30
        )
        async for event in stream:
            seen.append((event["type"], event["object"].data.get("step", "")))
            if event["type"] == "DELETED":
                return

    await core.create_namespaced_config_map(namespace, _configmap("watched", step="1"))
    await core.patch_namespaced_config_map("watched", namespace, {"data": {"step": "2"}})
    await core.delete_namespaced_config_map("watched", namespace)
    with anyio.fail_after(20):
        await consume()
    assert seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")]


async def test_kubectl_creates_gets_lists_and_watches_configmaps(
    host: ControlPlane, namespace: str, binaries: Binaries
) -> None:
    await host.kubectl(
        "create", "configmap", "from-kubectl", "-n", namespace, "--from-literal=tool=kubectl"
    )
    shown = await host.kubectl("get", "configmap", "from-kubectl", "-n", namespace, "-o", "json")
    assert json.loads(shown.stdout)["data"] == {"tool": "kubectl"}
    # The object kubectl made is the one the API serves: one store behind both.
    core = client.CoreV1Api(host.api_client)
    read = await core.read_namespaced_config_map("from-kubectl", namespace)
    assert read.data["tool"] == "kubectl"
    listed = await host.kubectl("get", "configmaps", "-n", namespace, "-o", "name")
    assert listed.stdout.split() == [b"configmap/from-kubectl"]
    version = await host.kubectl("version", "-o", "json")
    assert json.loads(version.stdout)["serverVersion"]["gitVersion"] == await host.server_version()

    # --watch lists first, then watches from the list's resourceVersion: once the listed object is
    # printed, a later create cannot be missed.
    argv = [str(binaries.kubectl), f"--kubeconfig={host.kubeconfig}", "get", "configmaps"]
    async with await anyio.open_process(
        [*argv, "-n", namespace, "-o", "name", "--watch"]
    ) as watch_:
        assert watch_.stdout is not None
        output = b""
        with anyio.fail_after(20):
            while b"configmap/from-kubectl" not in output:
                output += await watch_.stdout.receive()
            await host.kubectl("create", "configmap", "watched", "-n", namespace)
            while b"configmap/watched" not in output:
                output += await watch_.stdout.receive()
        watch_.terminate()
    assert output.split() == [b"configmap/from-kubectl", b"configmap/watched"]


async def test_server_reports_its_real_version(host: ControlPlane) -> None:
    version = await host.server_version()
    assert version.startswith("v1.")
    assert not version.startswith("v0.0.0"), "version ldflags missing from the build"


async def test_crd_from_file_status_subresource_and_pruning(
    host: ControlPlane, namespace: str
) -> None:
    await host.install_crds([CRD_FILE])
    base = f"/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"
    created = await host.request(
        "POST",
        base,
        {
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "nightly"},
            "spec": {"cronSpec": "0 3 * * *", "image": "busybox", "unknownField": "dropped"},
            "status": {"ready": 5},
        },
    )
    # Structural schema: the unknown field is pruned and the default applied.
    assert "unknownField" not in created["spec"]
    assert created["spec"]["replicas"] == 1
    # With a status subresource, status sent to the main resource is ignored ...
    assert "status" not in created or "ready" not in created.get("status", {})
    # ... and written only through /status, which in turn ignores spec changes.
    created["status"] = {"ready": 2}
    created["spec"]["image"] = "nginx"
    updated = await host.request("PUT", f"{base}/nightly/status", created)
    assert updated["status"] == {"ready": 2}
    assert updated["spec"]["image"] == "busybox"
    assert updated["metadata"]["generation"] == created["metadata"]["generation"]


async def test_stale_update_gets_409_conflict(host: ControlPlane, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    first = await host.request(
        "POST", path, {"metadata": {"name": "contended"}, "data": {"v": "1"}}
    )
    fresh = {**first, "data": {"v": "2"}}
    await host.request("PUT", f"{path}/contended", fresh)
    stale = {**first, "data": {"v": "3"}}  # still carries the first resourceVersion
    with pytest.raises(RequestError) as caught:
        await host.request("PUT", f"{path}/contended", stale)
    assert caught.value.status == 409
    assert caught.value.body["reason"] == "Conflict"


async def test_rbac_user_is_forbidden_until_a_rolebinding_grants_access(
    host: ControlPlane, namespace: str
) -> None:
    alice = await host.add_user("alice", groups=["developers"])
    denied = await host.kubectl("get", "configmaps", "-n", namespace, user=alice, check=False)
    assert denied.returncode != 0
    assert b"forbidden" in denied.stderr.lower()

    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    await host.request(
        "POST",
        f"{rbac}/roles",
        {
            "metadata": {"name": "configmap-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
        },
    )
    await host.request(
        "POST",
        f"{rbac}/rolebindings",
        {
            "metadata": {"name": "developers-read"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "configmap-reader",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "developers"}
            ],
        },
    )

    async def allowed() -> bool:
        result = await host.kubectl("get", "configmaps", "-n", namespace, user=alice, check=False)
        return result.returncode == 0

    assert await eventually(allowed, timeout=10)
    # Granted exactly that: writing is still refused.
    write = await host.kubectl(
        "create", "configmap", "nope", "-n", namespace, user=alice, check=False
    )
    assert write.returncode != 0


async def test_a_403_carries_the_apiserver_status(host: ControlPlane, namespace: str) -> None:
    bob = await host.add_user("bob")
    api_client = await load_api_client(bob.kubeconfig, scratch=host.directory / "client")
    try:
        with pytest.raises(ApiException) as caught:
            await client.CoreV1Api(api_client).list_namespaced_config_map(namespace)
        assert caught.value.status == 403
        assert caught.value.body is not None
        assert json.loads(caught.value.body)["reason"] == "Forbidden"
    finally:
        await api_client.close()
