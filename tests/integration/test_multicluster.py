"""Host and members share one etcd under distinct prefixes and stay isolated from each other."""

from __future__ import annotations

import aiohttp
import pytest

from testenv import Environment, RequestError

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]


async def test_members_are_separate_clusters_on_one_etcd(multicluster: Environment) -> None:
    assert {"member1", "member2"} <= set(multicluster.members)
    urls = {plane.url for plane in multicluster.clusters.values()}
    assert len(urls) == len(multicluster.clusters), "each cluster has its own apiserver"
    for plane in multicluster.clusters.values():
        assert (await plane.server_version()).startswith("v1.")

    member1, member2 = multicluster.members["member1"], multicluster.members["member2"]
    path = "/api/v1/namespaces/default/configmaps"
    await member1.request("POST", path, {"metadata": {"name": "only-in-member1"}})
    await member1.request("GET", f"{path}/only-in-member1")
    for other in (member2, multicluster.host):
        with pytest.raises(RequestError) as caught:
            await other.request("GET", f"{path}/only-in-member1")
        assert caught.value.status == 404
    await member1.request("DELETE", f"{path}/only-in-member1")


async def test_each_cluster_trusts_only_its_own_client_ca(multicluster: Environment) -> None:
    member1, member2 = multicluster.members["member1"], multicluster.members["member2"]
    user = await member1.add_user("carol", groups=["system:masters"])
    ok = await member1.kubectl("get", "ns", "default", user=user, check=False)
    assert ok.returncode == 0
    # The same certificate presented to member2 is not an identity there: 401, not admin.
    context = member2.apiserver.ssl_context(user.cert_files)
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session,
        session.get(f"{member2.url}/api/v1/namespaces/default") as response,
    ):
        assert response.status == 401
