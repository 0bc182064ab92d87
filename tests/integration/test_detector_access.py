"""The detector's access reviews against the real kube-apiserver's RBAC: which kinds to watch."""

from __future__ import annotations

import secrets
from pathlib import Path

import anyio
import pytest

from controllers.detector import AccessReview, Discovery, watchable_resources
from controllers.permittedkinds import Denial, PermittedKinds
from reconcile import GVK, Cache, Client, ClusterConfig, EnqueueRequestForObject, WorkQueue
from testenv import ControlPlane

pytestmark = pytest.mark.asyncio(loop_scope="session")

DEPLOYMENT = GVK("apps", "v1", "Deployment")
CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")


async def _client(plane: ControlPlane, kubeconfig: Path) -> Client:
    config = await ClusterConfig.from_kubeconfig(kubeconfig, temp_dir=plane.directory / "client")
    return Client(config)


async def _user_allowed(host: ControlPlane, rules: list[dict[str, object]]) -> Path:
    """A new user whose only rights (beyond the bootstrap roles) are ``rules``, cluster-wide."""
    name = f"detector-{secrets.token_hex(3)}"
    user = await host.add_user(name)
    base = "/apis/rbac.authorization.k8s.io/v1"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}
    await host.request(
        "POST", f"{base}/clusterroles", {**role, "metadata": {"name": name}, "rules": rules}
    )
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}],
    }
    await host.request("POST", f"{base}/clusterrolebindings", binding)
    return user.kubeconfig


async def test_only_kinds_with_every_template_verb_are_kept(host: ControlPlane) -> None:
    kubeconfig = await _user_allowed(
        host,
        [
            {
                "apiGroups": ["apps"],
                "resources": ["deployments"],
                "verbs": ["get", "list", "watch", "patch"],
            },
            # Listing without patching: seen but not claimable, so not watched either.
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
            # Secrets only by name: never watched.
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        ],
    )
    async with await _client(host, kubeconfig) as client:
        found = await watchable_resources(client)
        allowed, denied = await AccessReview(client).partition(found)
    assert [r.gvk for r in allowed] == [DEPLOYMENT]
    assert denied[CONFIGMAP] == "patch"
    assert denied[SECRET] == "list"
    assert len(denied) == len(found) - 1


async def test_an_identity_allowed_everything_keeps_every_kind(host: ControlPlane) -> None:
    async with await _client(host, host.kubeconfig) as admin:
        found = await watchable_resources(admin)
        allowed, denied = await AccessReview(admin).partition(found)
    assert allowed == found
    assert denied == {}


async def test_discovery_publishes_what_readers_may_read(host: ControlPlane) -> None:
    # What the dependencies distributor and the binding controller consult instead of asking.
    kubeconfig = await _user_allowed(
        host,
        [
            {
                "apiGroups": ["apps"],
                "resources": ["deployments"],
                "verbs": ["get", "list", "watch", "patch"],
            },
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
        ],
    )
    kinds = PermittedKinds()
    async with await _client(host, kubeconfig) as client:
        cache = Cache(client, sync_timeout=30)
        access = AccessReview(client)
        discovery = Discovery(
            client,
            cache,
            lambda gvk: EnqueueRequestForObject(),
            access=access,
            permitted_kinds=kinds,
        )
        assert kinds.pending(), "announced when the detector is set up"
        async with anyio.create_task_group() as group:
            await group.start(cache.run)
            await discovery.refresh(WorkQueue(), group)
            group.cancel_scope.cancel()
    assert not kinds.pending()
    assert kinds.permitted == {DEPLOYMENT}
    assert kinds.denial(SECRET) == Denial("", "secrets", "get")
    # Refused only patch: a reader may read ConfigMaps live, the detector may not claim them.
    assert kinds.denial(CONFIGMAP) is None
    assert kinds.denial(CONFIGMAP, ("patch",)) == Denial("", "configmaps", "patch")
