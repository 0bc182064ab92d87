"""A Cluster may use only its own Secret, against a real host (#26 item 6).

The thief may write Clusters, not Secrets. Their Cluster points at a plain-HTTP listener of theirs
on 127.0.0.1 (insecure endpoints are allowed here, so that nothing but the binding stands in the
way) and at the victim member's Secret, bound to the victim's Cluster as join binds it. The
registry refuses it: Ready=False SecretNotBound and a MemberConfigInvalid Event, and the listener
hears nothing. The control: the same Cluster with a Secret bound to it does send its token there.
"""

from __future__ import annotations

import contextlib
import secrets

import pytest

from controllers.api import CLUSTER_GVK
from controllers.cluster import MemberOptions
from reconcile import Client, NotFound
from testenv import ControlPlane, eventually
from tests.integration.test_member_connections import (
    SECRET,
    a_cluster,
    a_secret,
    bind,
    cluster_controllers,
    config_warning,
    delete_cluster,
    host_client,
    listening,
    ready_reason,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

__all__ = ["host_client"]  # the fixture, used by name


async def test_a_cluster_pointing_at_another_members_secret_never_sends_its_token(
    host: ControlPlane, host_client: Client
) -> None:
    victim, thief = f"victim-{secrets.token_hex(3)}", f"thief-{secrets.token_hex(3)}"
    canary = f"canary-{secrets.token_hex(8)}".encode()
    await host_client.create(a_secret(victim, "karmada-cluster", canary))
    await host_client.create(a_cluster(victim, "127.0.0.1:1"))
    await bind(host_client, victim)
    allowed = MemberOptions(allow_insecure_endpoints=True)
    try:
        async with listening() as listener:
            stolen = a_cluster(thief, f"http://127.0.0.1:{listener.port}")
            stolen["spec"]["secretRef"]["name"] = victim
            await host_client.create(stolen)
            async with cluster_controllers(host, allowed) as registry:
                condition = await ready_reason(host_client, thief, "SecretNotBound")
                words = (
                    f"Secret karmada-cluster/{victim} is bound to Cluster {victim!r}, not to "
                    f"Cluster {thief}"
                )
                assert condition["status"] == "False"
                assert words in condition["message"]
                await config_warning(host_client, thief, words)
                assert registry.get(thief) is None
                assert listener.connections == 0
                assert canary not in listener.received

                # The control: a Secret of its own, bound to it, does reach the listener.
                own = f"canary-{secrets.token_hex(8)}".encode()
                await host_client.create(a_secret(thief, "karmada-cluster", own))
                await bind(host_client, thief)
                cluster = await host_client.get(CLUSTER_GVK, thief)
                cluster["spec"]["secretRef"]["name"] = thief
                await host_client.update(cluster)

                async def own_token_arrived() -> bool:
                    return own in listener.received

                await eventually(own_token_arrived, timeout=30, interval=0.2)
                assert canary not in listener.received
                await delete_cluster(host_client, thief)
                await delete_cluster(host_client, victim)
    finally:
        for name in (victim, thief):
            with contextlib.suppress(NotFound):
                await host_client.delete(SECRET, name, namespace="karmada-cluster")
            with contextlib.suppress(NotFound):
                await host_client.delete(CLUSTER_GVK, name)
