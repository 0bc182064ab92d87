"""The cluster controllers on a fake host: refused member configurations, Events, no retry loop."""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from controllers.api import CLUSTER_GVK, READY_CONDITION, SYNC_MODE_PULL, crd_paths
from controllers.cluster import (
    MEMBER_CONFIG_INVALID,
    ClusterController,
    ClusterProvider,
    ClusterStatusController,
    ClusterStatusOptions,
    Members,
    setup_cluster_controller,
    setup_cluster_status_controller,
)
from controllers.cluster.binding import owner_reference
from controllers.cluster.connection import SECRET
from controllers.cluster.expiry import TOKEN_EXPIRES_SOON, TOKEN_EXPIRING_CONDITION, TOKEN_VALID
from controllers.cluster.lease import LEASE, cluster_lease_renew_time
from reconcile import (
    EVENT_GVK,
    GVK,
    Conflict,
    Event,
    EventType,
    Manager,
    ManagerOptions,
    Request,
    Result,
    get_condition,
)
from testenv import FakeClient, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

# Only watch events may bring a Cluster back: the status controller's own period is an hour.
NAMESPACE_GVK = GVK("", "v1", "Namespace")
HOURLY = ClusterStatusOptions(update_frequency=3600, failure_threshold=0, success_threshold=0)


def secret(token: bytes, owner: dict[str, Any] | None = None, name: str = "m") -> dict[str, Any]:
    """Secret ``name`` holding ``token``, bound to the Cluster ``owner`` (as join binds it)."""
    metadata: dict[str, Any] = {"name": name, "namespace": "karmada-cluster"}
    if owner is not None:
        meta = owner["metadata"]
        metadata["ownerReferences"] = [owner_reference(meta["name"], meta["uid"])]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "data": {"token": base64.b64encode(token).decode()},
    }


def cluster(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "m"},
        "spec": {
            # Refuses connections at once, so probes of a connected member end quickly.
            "apiEndpoint": "127.0.0.1:1",
            "secretRef": {"namespace": "karmada-cluster", "name": "m"},
            **spec,
        },
    }


class Running:
    def __init__(
        self, fake: FakeClient, cluster: ClusterController, members: Members[ClusterProvider]
    ):
        self.fake, self.cluster, self.members = fake, cluster, members
        self.status: ClusterStatusController | None = None

    async def ready(self, reason: str) -> dict[str, Any]:
        async def matches() -> dict[str, Any] | None:
            current = get_condition(await self.fake.get(CLUSTER_GVK, "m"), READY_CONDITION)
            return dict(current) if current and current.get("reason") == reason else None

        return await eventually(matches, timeout=10)

    async def connected(self) -> None:
        async def registered() -> bool:
            return self.members.get("m") is not None

        await eventually(registered, timeout=10)

    async def warning(self, words: str) -> dict[str, Any]:
        async def found() -> dict[str, Any] | None:
            for event in (await self.fake.list(EVENT_GVK, namespace="default"))["items"]:
                if event["reason"] == MEMBER_CONFIG_INVALID and words in event["message"]:
                    return dict(event)
            return None

        return await eventually(found, timeout=10)


@asynccontextmanager
async def running(tmp_path: Path, *, with_status: bool = True) -> AsyncIterator[Running]:
    fake = FakeClient()
    fake.install_crds(crd_paths())
    manager = Manager(client=fake, options=ManagerOptions(metrics_bind_address="0"))
    members = Members.of(manager, temp_dir=tmp_path)
    state = Running(fake, setup_cluster_controller(manager, members), members)
    if with_status:
        state.status = setup_cluster_status_controller(manager, members, HOURLY)
    async with anyio.create_task_group() as group:
        await group.start(manager.start)
        yield state
        manager.stop()


async def test_a_non_utf8_token_is_reported_and_not_retried_until_the_secret_changes(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as env:
        created = await env.fake.create(cluster())
        await env.fake.create(secret(b"\xff\xfe-not-text", created))
        condition = await env.ready("InvalidSecret")
        assert condition["status"] == "False"
        assert "data.token is not UTF-8 text" in condition["message"]
        event = await env.warning("data.token is not UTF-8 text")
        assert event["type"] == "Warning"
        assert event["involvedObject"]["name"] == "m"

        # Nothing to retry: no requeue, no error (an error would mean backoff, forever).
        assert await env.cluster.reconcile(Request("m")) is None
        assert env.status is not None
        assert await env.status.reconcile(Request("m")) == Result(requeue_after=3600)

        # Fixing the Secret is what brings the Cluster back.
        await env.fake.update(secret(b"a-usable-token", created))
        await env.connected()
        await env.ready("ClusterNotReachable")


async def test_the_credentials_watch_leaves_the_hosts_secret_kind_unscoped(tmp_path: Path) -> None:
    # Secrets are resource templates too: the detector lists them in any namespace.
    async with running(tmp_path) as env:
        manager = env.members.manager
        template = {**secret(b"app-token"), "metadata": {"name": "app", "namespace": "apps"}}
        await env.fake.create(template)
        await env.fake.create(secret(b"a-usable-token"))
        listed = await manager.client.list(SECRET, namespace="apps")
        assert [item["metadata"]["name"] for item in listed["items"]] == ["app"]
        assert listed["items"][0]["data"] == template["data"]

        # The credentials are watched by the member provider's own informer, of one namespace.
        informer = env.members.provider.secrets

        async def seen() -> bool:
            return informer.indexer.get("karmada-cluster/m") is not None

        await eventually(seen, timeout=10)
        assert informer.indexer.get("apps/app") is None


async def test_the_cluster_controller_alone_engages_when_a_missing_secret_appears(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, with_status=False) as env:
        created = await env.fake.create(cluster())
        await env.warning("Secret karmada-cluster/m not found")
        assert env.members.get("m") is None
        await env.fake.create(secret(b"a-usable-token", created))
        await env.connected()


async def test_a_cluster_naming_another_clusters_secret_is_refused_until_it_names_its_own(
    tmp_path: Path,
) -> None:
    """#26 item 6: Ready=False SecretNotBound and an Event, no connection with that token."""
    async with running(tmp_path) as env:
        other = await env.fake.create({**cluster(), "metadata": {"name": "other"}})
        await env.fake.create(secret(b"others-token", other, name="other"))
        reference = {"namespace": "karmada-cluster", "name": "other"}
        mine = await env.fake.create(cluster(apiEndpoint="127.0.0.2:1", secretRef=reference))
        condition = await env.ready("SecretNotBound")
        assert condition["status"] == "False"
        words = "Secret karmada-cluster/other is bound to Cluster 'other', not to Cluster m"
        assert words in condition["message"]
        await env.warning(words)
        assert env.members.get("m") is None
        # Its own Secret, bound to it: connected (the watch on Secrets brings it back).
        await env.fake.create(secret(b"my-token", mine))
        mine = await env.fake.get(CLUSTER_GVK, "m")
        mine["spec"]["secretRef"]["name"] = "m"
        await env.fake.update(mine)
        await env.connected()


@pytest.mark.parametrize(
    ("spec", "reason", "words"),
    [
        pytest.param(
            {"apiEndpoint": "http://127.0.0.1:8080"}, "InsecureEndpoint", "plain HTTP", id="http"
        ),
        pytest.param(
            {"secretRef": {"namespace": "kube-system", "name": "m"}},
            "SecretRefNotAllowed",
            "read only from namespace karmada-cluster",
            id="foreign-secret",
        ),
        pytest.param(
            {"secretRef": {"namespace": "karmada-cluster", "name": "ghost"}},
            "SecretNotFound",
            "Secret karmada-cluster/ghost not found",
            id="missing-secret",
        ),
    ],
)
async def test_refused_clusters_say_why_in_ready_and_an_event(
    tmp_path: Path, spec: dict[str, Any], reason: str, words: str
) -> None:
    async with running(tmp_path) as env:
        await env.fake.create(secret(b"a-usable-token"))
        await env.fake.create(cluster(**spec))
        condition = await env.ready(reason)
        assert condition["status"] == "False"
        assert condition["message"].startswith("cluster m: ")
        assert words in condition["message"]
        await env.warning(words)
        assert env.members.get("m") is None


def _jwt(lifetime: float) -> bytes:
    """A token as kube-apiserver issues it: a JWT whose iat is now and exp ``lifetime`` later."""
    now = int(time.time())
    claims = orjson.dumps({"iat": now, "exp": now + int(lifetime)})
    parts = (b'{"alg":"RS256"}', claims, b"signature")
    return b".".join(base64.urlsafe_b64encode(part).rstrip(b"=") for part in parts)


async def _expiring(env: Running, status: str, reason: str) -> dict[str, Any]:
    async def matches() -> dict[str, Any] | None:
        condition = get_condition(await env.fake.get(CLUSTER_GVK, "m"), TOKEN_EXPIRING_CONDITION)
        if condition is None or (condition["status"], condition["reason"]) != (status, reason):
            return None
        return dict(condition)

    return await eventually(matches, timeout=10)


async def _events(env: Running, reason: str) -> list[dict[str, Any]]:
    listed = (await env.fake.list(EVENT_GVK, namespace="default"))["items"]
    return [event for event in listed if event["reason"] == reason]


async def test_a_token_near_its_expiry_is_a_condition_and_one_event_until_renewed(
    tmp_path: Path,
) -> None:
    """#26 item 7: a member that capped the token to an hour; the renewal clears the warning."""
    async with running(tmp_path) as env:
        created = await env.fake.create(cluster())
        await env.fake.create(secret(_jwt(3600), created))
        condition = await _expiring(env, "True", TOKEN_EXPIRES_SOON)
        assert "reconcile join NAME --refresh" in condition["message"]

        async def warned() -> list[dict[str, Any]]:
            return await _events(env, TOKEN_EXPIRES_SOON)

        (event,) = await eventually(warned, timeout=10)
        assert event["type"] == "Warning"
        assert event["message"] == condition["message"]
        assert env.status is not None
        await env.status.reconcile(Request("m"))  # probed again: still one Event
        assert len(await _events(env, TOKEN_EXPIRES_SOON)) == 1
        assert (await _events(env, TOKEN_EXPIRES_SOON))[0].get("count", 1) == 1

        await env.fake.update(secret(_jwt(365 * 86400), created))  # join --refresh's write
        condition = await _expiring(env, "False", TOKEN_VALID)
        assert "expires" in condition["message"]


async def test_a_token_without_a_known_expiry_has_no_condition(tmp_path: Path) -> None:
    async with running(tmp_path) as env:
        created = await env.fake.create(cluster())
        await env.fake.create(secret(_jwt(3600), created))
        await _expiring(env, "True", TOKEN_EXPIRES_SOON)
        await env.fake.update(secret(b"an-opaque-token", created))

        async def gone() -> bool:
            cluster = await env.fake.get(CLUSTER_GVK, "m")
            return get_condition(cluster, TOKEN_EXPIRING_CONDITION) is None

        await eventually(gone, timeout=10)


async def test_an_execution_namespace_that_exists_is_read_not_created_again(
    tmp_path: Path,
) -> None:
    # Every reconcile of every Cluster (each takeover, each re-list) once sent a create that the
    # apiserver refused as AlreadyExists: a write per Cluster for nothing (#29).
    async with running(tmp_path, with_status=False) as env:
        await env.fake.create(cluster())

        async def made() -> bool:
            found = await env.fake.list(NAMESPACE_GVK)
            return any(n["metadata"]["name"] == "karmada-es-m" for n in found["items"])

        await eventually(made, timeout=10)
        writes: list[tuple[str, str]] = []
        env.fake.write_guard = lambda method, path: writes.append((method, path))
        await env.cluster.reconcile(Request("m"))
        assert ("POST", "/api/v1/namespaces") not in writes, writes


# --- Pull Clusters: the agent's to report on ------------------------------------------------------


async def _switched_to_pull(fake: FakeClient) -> tuple[dict[str, Any], dict[str, Any]]:
    """Cluster m before and after it turned Pull (and lost its secretRef), as an agent's
    registration rewrites it; the cluster controller writes it too (finalizer, taints)."""
    while True:
        current = await fake.get(CLUSTER_GVK, "m")
        spec = {k: v for k, v in current["spec"].items() if k != "secretRef"}
        with contextlib.suppress(Conflict):
            return current, await fake.update(
                {**current, "spec": {**spec, "syncMode": SYNC_MODE_PULL}}
            )


async def test_a_pull_clusters_status_and_lease_are_left_to_its_agent(tmp_path: Path) -> None:
    # Karmada's controller-manager runs cluster-status for Push Clusters only; a Pull Cluster's
    # agent writes its status and renews its Lease, from inside the member.
    async with running(tmp_path) as env:
        assert env.status is not None
        await env.fake.create(cluster())  # Push, its Secret missing: refused, Ready=False
        await env.ready("SecretNotFound")
        stale = env.members.problem("m")
        assert await cluster_lease_renew_time(env.fake, "m", "karmada-cluster") is not None
        current, pull = await _switched_to_pull(env.fake)

        async def cleared() -> bool:
            return env.members.problem("m") is None

        await eventually(cleared, timeout=10)
        assert not env.status.served(Event(EventType.UPDATE, pull, current))
        # The agent takes over: its own Ready, its own Lease (none yet).
        ready = {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "agent"}
        ready["lastTransitionTime"] = "2026-01-01T00:00:00Z"
        await env.fake.patch_status(CLUSTER_GVK, "m", {"status": {"conditions": [ready]}})
        await env.fake.delete(LEASE, "m", namespace="karmada-cluster")
        # Even while the provider's verdict lags behind the switch, the Cluster is not reported.
        assert stale is not None
        env.members.provider._problems["m"] = stale

        assert await env.status.reconcile(Request("m")) is None  # no requeue: nothing to probe
        condition = get_condition(await env.fake.get(CLUSTER_GVK, "m"), READY_CONDITION)
        assert condition is not None
        assert (condition["status"], condition["message"]) == ("True", "agent")
        assert await cluster_lease_renew_time(env.fake, "m", "karmada-cluster") is None
        assert env.members.get("m") is None
