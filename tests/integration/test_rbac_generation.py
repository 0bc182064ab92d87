"""Roles written by ``reconcile.rbac.role_manifests`` against the real apiserver's authorizer.

A user bound to the generated ClusterRole and Role may make exactly the requests its
``PERMISSIONS`` declare: cluster-wide cached reads, writes in the namespace it runs in
(``OWN_NAMESPACE``), its own named Lease; the apiserver refuses (403) anything undeclared.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from reconcile import GVK, Client, ClusterConfig, Forbidden, NotFound
from reconcile.rbac import OWN_NAMESPACE, Permissions, Rule, cache, role_manifests
from testenv import ControlPlane, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
LEASE = GVK("coordination.k8s.io", "v1", "Lease")
RBAC = "rbac.authorization.k8s.io"

PERMISSIONS = Permissions(
    rules=(
        cache("", "configmaps"),
        Rule(("",), ("configmaps",), ("create",), "the copies", namespace=OWN_NAMESPACE),
        Rule(
            ("coordination.k8s.io",),
            ("leases",),
            ("get",),
            "its Lease",
            namespace=OWN_NAMESPACE,
            names=("mine",),
        ),
    )
)


def _binding(role: dict[str, Any], user: str) -> dict[str, Any]:
    kind = "ClusterRoleBinding" if role["kind"] == "ClusterRole" else "RoleBinding"
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": kind,
        "metadata": dict(role["metadata"]),
        "roleRef": {"apiGroup": RBAC, "kind": role["kind"], "name": role["metadata"]["name"]},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}],
    }


def _cm(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


async def test_the_generated_roles_allow_what_is_declared_and_nothing_else(
    host: ControlPlane, client: Client, namespace: str
) -> None:
    name = f"generated-{secrets.token_hex(3)}"
    user = await host.add_user(name)
    manifests = role_manifests(name, [PERMISSIONS], namespace=namespace)
    assert [m["kind"] for m in manifests] == ["ClusterRole", "Role"]
    for role in manifests:
        await client.create(role)
        await client.create(_binding(role, user.name))
    config = await ClusterConfig.from_kubeconfig(user.kubeconfig, temp_dir=host.directory / name)
    async with Client(config) as restricted:

        async def may_list() -> bool:  # the authorizer sees new bindings through its informers
            try:
                await restricted.list(CONFIGMAP)  # cluster-wide list: declared by cache()
            except Forbidden:
                return False
            return True

        await eventually(may_list)
        await restricted.create(_cm("copy", namespace))  # create in its own namespace
        with pytest.raises(NotFound):  # allowed, so the apiserver looks and finds nothing
            await restricted.get(LEASE, "mine", namespace=namespace)
        with pytest.raises(Forbidden):  # get was declared for the Lease "mine" only
            await restricted.get(LEASE, "other", namespace=namespace)
        with pytest.raises(Forbidden):  # create only in its own namespace
            await restricted.create(_cm("copy", "default"))
        with pytest.raises(Forbidden):  # never declared
            await restricted.delete(CONFIGMAP, "copy", namespace=namespace)
        with pytest.raises(Forbidden):
            await restricted.list(SECRET, namespace=namespace)
