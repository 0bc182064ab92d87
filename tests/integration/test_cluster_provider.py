"""ClusterProvider against a real host and member: a joined member is engaged, reachably."""

from __future__ import annotations

import secrets

import anyio
import pytest

from controllers.api import CLUSTER_GVK
from controllers.cluster import ClusterProvider
from controllers.join import join_cluster
from reconcile import GVK, Client
from testenv import Environment, eventually
from tests.builders import RecordingEngager, delete_and_wait

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

SERVICE_ACCOUNT = GVK("", "v1", "ServiceAccount")


async def test_a_joined_member_is_engaged_reachably_and_a_deleted_cluster_disengaged(
    multicluster: Environment, karmada_client: Client
) -> None:
    member = multicluster.members["member1"]
    # A name of this test's own: other tests of the session may have joined member1 already.
    name = f"provided-{secrets.token_hex(3)}"
    engager = RecordingEngager()
    provider = ClusterProvider(karmada_client)
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            await group.start(provider.run, engager)
            assert name not in engager.engaged
            # Joined at run time, as `reconcile join` writes it: a Cluster and its bound Secret.
            await join_cluster(name, host=karmada_client, member_kubeconfig=str(member.kubeconfig))

            async def engaged() -> bool:
                return name in engager.engaged

            await eventually(engaged, timeout=20)
            config = engager.configs[name]
            assert config.host == member.url
            # The config reaches the member with the join's token (what it may read proves it
            # is that identity, not some other credential).
            async with Client(config) as member_client:
                account = await member_client.get(
                    SERVICE_ACCOUNT, f"karmada-{name}", namespace="karmada-cluster"
                )
            assert account["metadata"]["name"] == f"karmada-{name}"

            await delete_and_wait(karmada_client, CLUSTER_GVK, name)

            async def disengaged() -> bool:
                return name not in engager.engaged

            await eventually(disengaged, timeout=20)
            assert [call for call in engager.calls if call[1] == name] == [
                ("engage", name),
                ("disengage", name),
            ]
            group.cancel_scope.cancel()
