"""The namespace sync controller's Works against the real apiserver: what it reads back of a Work
it wrote is what it would write again, so a reconcile with nothing changed (a takeover, a
re-list) updates nothing (#29)."""

from __future__ import annotations

import contextlib
import secrets

import pytest

from controllers.api import WORK_GVK, execution_namespace
from controllers.namespacesync import _merged, namespace_work
from reconcile import GVK, AlreadyExists, Client, name_of
from testenv import ControlPlane

pytestmark = pytest.mark.asyncio(loop_scope="session")

NAMESPACE = GVK("", "v1", "Namespace")


async def test_a_namespace_work_read_back_needs_no_update(
    host: ControlPlane, karmada_client: Client
) -> None:
    name = f"nswork-{secrets.token_hex(3)}"
    await host.create_namespace(name)
    cluster = f"nswork-{secrets.token_hex(3)}"
    with contextlib.suppress(AlreadyExists):
        await host.create_namespace(execution_namespace(cluster))
    namespace = await karmada_client.get(NAMESPACE, name)
    desired = namespace_work(namespace, {"metadata": {"name": cluster}}, [])
    assert not desired["metadata"]["annotations"], "no ClusterOverridePolicy: no annotation"
    await karmada_client.create(desired)
    stored = await karmada_client.get(
        WORK_GVK, name_of(desired), namespace=execution_namespace(cluster)
    )
    # Before #29 the merge added "annotations": {}, which the apiserver drops: a no-op PUT on
    # every reconcile of every namespace, for each member.
    assert _merged(stored, desired) == stored
