"""Providers against real apiservers: SecretProvider watching kubeconfig Secrets on the host and
engaging a member that answers through the engaged config; KubeconfigProvider over a folder of
the members' kubeconfigs; EnvironmentProvider following members added and removed at run time."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from reconcile import GVK, Client, ClusterConfig
from reconcile.multicluster import KubeconfigProvider, Provider, SecretProvider
from reconcile.multicluster.secrets import CLUSTER_API_LABEL
from testenv import ControlPlane, Environment, EnvironmentProvider, eventually
from tests.builders import RecordingEngager

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

NAMESPACE_GVK = GVK("", "v1", "Namespace")


def kubeconfig_secret(
    name: str, namespace: str, document: dict[str, Any], cluster: str
) -> dict[str, Any]:
    """A Secret as Cluster API writes it: ``<cluster>-kubeconfig``, labelled, key ``value``."""
    value = base64.b64encode(yaml.safe_dump(document).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": {CLUSTER_API_LABEL: cluster}},
        "type": "cluster.x-k8s.io/secret",
        "data": {"value": value},
    }


@asynccontextmanager
async def running(provider: Provider, engager: RecordingEngager) -> AsyncIterator[None]:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            await group.start(provider.run, engager)
            yield
            group.cancel_scope.cancel()


async def engaged(engager: RecordingEngager, *names: str) -> None:
    async def probe() -> bool:
        return engager.engaged == set(names)

    await eventually(probe, timeout=30)


async def answers_as(config: ClusterConfig, plane: ControlPlane) -> None:
    """``config`` reaches ``plane``'s apiserver and is allowed to read there."""
    assert config.host == plane.url
    async with Client(config) as member:
        found = await member.get(NAMESPACE_GVK, "default")
    assert found["metadata"]["name"] == "default"


async def test_a_kubeconfig_secret_engages_the_member_it_points_at(
    multicluster: Environment, client: Client, namespace: str
) -> None:
    member = multicluster.members["member1"]
    document = yaml.safe_load(member.kubeconfig.read_text())  # certificates inline
    engager = RecordingEngager()
    async with running(SecretProvider(client, namespace), engager):
        created = await client.create(
            kubeconfig_secret("member1-kubeconfig", namespace, document, "member1")
        )
        # Refused (exec), next to it: logged, skipped, the good one unaffected.
        hostile = {**document, "users": [{"name": "admin", "user": {"exec": {"command": "id"}}}]}
        await client.create(kubeconfig_secret("evil-kubeconfig", namespace, hostile, "evil"))
        await engaged(engager, "member1")
        await answers_as(engager.configs["member1"], member)

        # The member's Secret turns hostile: the cluster goes.
        created["data"] = kubeconfig_secret("x", namespace, hostile, "x")["data"]
        await client.update(created)
        await engaged(engager)
        assert engager.calls == [("engage", "member1"), ("disengage", "member1")]


async def test_the_environment_provider_follows_members(multicluster: Environment) -> None:
    engager = RecordingEngager()
    before = set(multicluster.members)
    # A long interval: only the environment's hook can make the provider notice in time.
    async with running(EnvironmentProvider(multicluster, interval=3600), engager):
        assert engager.engaged == before
        await answers_as(engager.configs["member1"], multicluster.members["member1"])

        added = await multicluster.add_member("provided")
        try:
            await engaged(engager, *before, "provided")
            await answers_as(engager.configs["provided"], added)
        finally:
            await multicluster.remove_member("provided")
        await engaged(engager, *before)


async def test_a_folder_of_member_kubeconfigs_engages_each_member(
    multicluster: Environment, tmp_path: Path
) -> None:
    members = {name: multicluster.members[name] for name in ("member1", "member2")}
    for name, plane in members.items():
        (tmp_path / f"{name}.yaml").write_bytes(plane.kubeconfig.read_bytes())
    engager = RecordingEngager()
    async with running(KubeconfigProvider(tmp_path, temp_dir=tmp_path / "keys"), engager):
        assert engager.engaged == set(members)
        for name, plane in members.items():
            await answers_as(engager.configs[name], plane)
