"""ClusterProvider on the fake host: Karmada Clusters and their Secrets engage members."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from structlog.testing import capture_logs

from controllers.api import CLUSTER_GVK, SYNC_MODE_PULL, SYNC_MODE_PUSH, crd_paths
from controllers.cluster import (
    INSECURE_ENDPOINT,
    SECRET_NOT_BOUND,
    SECRET_NOT_FOUND,
    SECRET_REF_NOT_ALLOWED,
    ClusterProvider,
    MemberOptions,
)
from controllers.clusterscope import ClusterScope
from reconcile import GVK
from reconcile.multicluster import Provider
from testenv import FakeClient, eventually
from tests.builders import RecordingEngager

asyncio_test = pytest.mark.asyncio(loop_scope="session")

NAMESPACE = "karmada-cluster"
SECRET = GVK("", "v1", "Secret")
TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.c2lnbmF0dXJl"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def cluster(name: str, endpoint: str = "10.0.0.1:6443", **spec: Any) -> dict[str, Any]:
    defaults = {"apiEndpoint": endpoint, "secretRef": {"namespace": NAMESPACE, "name": name}}
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {**defaults, **spec},
    }


def secret(created: dict[str, Any], token: str = TOKEN) -> dict[str, Any]:
    """The Secret of the Cluster ``created`` (as the fake returned it), bound to it as
    ``karmadactl join`` binds it."""
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    owner = {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "name": name,
        "uid": uid,
        "controller": True,
    }
    meta = {"name": name, "namespace": NAMESPACE, "ownerReferences": [owner]}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"token": b64(token)}}


def host() -> FakeClient:
    fake = FakeClient()
    fake.install_crds(crd_paths())
    return fake


async def joined(fake: FakeClient, name: str, endpoint: str = "10.0.0.1:6443") -> dict[str, Any]:
    """A Cluster and its bound Secret, as ``reconcile join`` writes them."""
    created = await fake.create(cluster(name, endpoint))
    await fake.create(secret(created))
    return created


@asynccontextmanager
async def running(provider: ClusterProvider, engager: RecordingEngager) -> AsyncIterator[None]:
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            await group.start(provider.run, engager)
            yield
            group.cancel_scope.cancel()


async def until(engager: RecordingEngager, **hosts: str) -> None:
    """Wait until exactly ``hosts`` (cluster → server URL) are engaged."""

    async def probe() -> bool:
        return engager.hosts() == hosts

    await eventually(probe, timeout=10)


def refusals(logs: list[MutableMapping[str, Any]]) -> list[tuple[str, str]]:
    return [(e["cluster"], e["reason"]) for e in logs if e["event"] == "cluster not engaged"]


def test_it_is_a_provider() -> None:
    provider: Provider = ClusterProvider(FakeClient())  # mypy checks the protocol
    assert provider is not None


@asyncio_test
async def test_joined_clusters_are_engaged_before_started_and_a_secret_later_engages() -> None:
    fake = host()
    await joined(fake, "east", "https://east.example:6443")
    await fake.create(cluster("west", "https://west.example"))  # its Secret comes later
    engager = RecordingEngager()
    provider = ClusterProvider(fake)
    with capture_logs() as logs:
        async with running(provider, engager):
            assert engager.hosts() == {"east": "https://east.example:6443"}
            assert refusals(logs) == [("west", SECRET_NOT_FOUND)]
            west = await fake.get(CLUSTER_GVK, "west")
            await fake.create(secret(west))
            await until(engager, east="https://east.example:6443", west="https://west.example")
            assert provider.engaged == {"east", "west"}
    assert TOKEN not in repr(logs)


@asyncio_test
async def test_endpoint_or_token_changes_re_engage_others_do_not_and_deletion_disengages() -> None:
    fake = host()
    created = await joined(fake, "m", "https://m1.example")
    engager = RecordingEngager()
    async with running(ClusterProvider(fake), engager):
        assert engager.take() == [("engage", "m")]
        labelled = {**created, "metadata": {**created["metadata"], "labels": {"tier": "a"}}}
        labelled = await fake.update(labelled)  # a change that leaves the connection as it was
        moved = {**labelled, "spec": {**labelled["spec"], "apiEndpoint": "https://m2.example"}}
        await fake.update(moved)
        await until(engager, m="https://m2.example")
        assert engager.take() == [("engage", "m")]  # the label change did not re-engage

        current = await fake.get(SECRET, "m", namespace=NAMESPACE)
        await fake.update({**current, "data": {"token": b64("another-token")}})

        async def re_engaged() -> bool:
            return engager.calls == [("engage", "m")]

        await eventually(re_engaged)
        await fake.delete(await fake.get(CLUSTER_GVK, "m"))
        await until(engager)
        assert engager.take() == [("engage", "m"), ("disengage", "m")]


@asyncio_test
async def test_a_cluster_breaking_a_rule_is_disengaged_and_logged_once_per_version() -> None:
    fake = host()
    created = await joined(fake, "m", "https://m.example")
    engager = RecordingEngager()
    provider = ClusterProvider(fake)
    with capture_logs() as logs:
        async with running(provider, engager):
            assert engager.engaged == {"m"}
            insecure = {**created, "spec": {**created["spec"], "apiEndpoint": "http://m.example"}}
            await fake.update(insecure)
            await until(engager)
            # A relist or resync of the same versions is not logged again.
            provider._pending.note("m")
            other = await fake.create(cluster("z"))
            await fake.create(secret(other))
            await until(engager, z="https://10.0.0.1:6443")
    # z's Secret came after z: refused until then, and engaged when it came.
    assert refusals(logs) == [("m", INSECURE_ENDPOINT), ("z", SECRET_NOT_FOUND)]
    assert engager.take() == [("engage", "m"), ("disengage", "m"), ("engage", "z")]


@asyncio_test
async def test_a_secret_bound_to_another_cluster_is_refused_and_its_token_never_used() -> None:
    fake = host()
    victim = await joined(fake, "m")
    # A writer of Clusters points "thief" at an endpoint of their choosing and at m's Secret.
    reference = {"namespace": NAMESPACE, "name": "m"}
    await fake.create(cluster("thief", "https://evil.example", secretRef=reference))
    engager = RecordingEngager()
    with capture_logs() as logs:
        async with running(ClusterProvider(fake), engager):
            assert engager.hosts() == {"m": "https://10.0.0.1:6443"}
    assert refusals(logs) == [("thief", SECRET_NOT_BOUND)]
    assert TOKEN not in repr(logs)
    assert victim["metadata"]["name"] == "m"


@asyncio_test
async def test_secrets_are_read_from_the_configured_namespace_only() -> None:
    fake = host()
    created = await fake.create(cluster("m", secretRef={"namespace": "other", "name": "m"}))
    moved = secret(created)
    moved["metadata"]["namespace"] = "other"
    await fake.create(moved)
    engager = RecordingEngager()
    provider = ClusterProvider(fake, options=MemberOptions(cluster_namespace="other"))
    async with running(provider, engager):
        assert engager.hosts() == {"m": "https://10.0.0.1:6443"}


@asyncio_test
async def test_a_member_kubeconfig_file_is_used_instead_of_the_secret(tmp_path: Path) -> None:
    fake = host()
    await fake.create(cluster("local"))  # no Secret: the file is enough
    path = tmp_path / "local.yaml"
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "file-token"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    path.write_text(yaml.safe_dump(document))
    engager = RecordingEngager()
    async with running(ClusterProvider(fake, kubeconfigs={"local": path}), engager):
        assert engager.hosts() == {"local": "https://127.0.0.1:6443"}


@asyncio_test
async def test_a_refusing_engager_does_not_stop_the_others() -> None:
    fake = host()
    await joined(fake, "a")
    await joined(fake, "b", "https://b.example")
    engager = RecordingEngager(refuse=("a",))
    async with running(ClusterProvider(fake), engager):
        assert engager.hosts() == {"b": "https://b.example"}


@asyncio_test
async def test_a_deleted_secret_disengages_its_cluster() -> None:
    fake = host()
    await joined(fake, "m")
    engager = RecordingEngager()
    with capture_logs() as logs:
        async with running(ClusterProvider(fake), engager):
            assert engager.engaged == {"m"}
            await fake.delete(await fake.get(SECRET, "m", namespace=NAMESPACE))
            await until(engager)
    assert refusals(logs) == [("m", SECRET_NOT_FOUND)]


def _jwt(lifetime: int) -> str:
    """A token as kube-apiserver issues it: a JWT with iat now and exp ``lifetime`` later."""
    now = 1_800_000_000
    claims = f'{{"iat":{now},"exp":{now + lifetime}}}'.encode()
    parts = (b'{"alg":"RS256"}', claims, b"signature")
    return ".".join(base64.urlsafe_b64encode(p).rstrip(b"=").decode() for p in parts)


@asyncio_test
async def test_its_verdicts_are_read_per_cluster_and_each_change_is_heard() -> None:
    """What Members gives the cluster controllers: problem, token_lifetime, on_change."""
    fake = host()
    created = await fake.create(cluster("m"))
    engager = RecordingEngager()
    provider = ClusterProvider(fake)
    heard: list[str] = []
    stop_listening = provider.on_change(heard.append)
    async with running(provider, engager):
        problem = provider.problem("m")
        assert problem is not None
        assert problem.reason == SECRET_NOT_FOUND
        assert str(problem) == f"cluster m: Secret {NAMESPACE}/m not found"
        assert provider.token_lifetime("m") is None
        assert heard == ["m"]
        await fake.create(secret(created, token=_jwt(3600)))
        await until(engager, m="https://10.0.0.1:6443")
        assert provider.problem("m") is None
        lifetime = provider.token_lifetime("m")
        assert lifetime is not None
        assert (lifetime.issued, lifetime.expires) == (1_800_000_000, 1_800_003_600)
        assert heard == ["m", "m"]
        # A status update changes nothing: no verdict to hear of.
        await fake.update_status({**(await fake.get(CLUSTER_GVK, "m")), "status": {"x": 1}})
        await fake.delete(CLUSTER_GVK, "m")
        await until(engager)
        assert (provider.problem("m"), provider.token_lifetime("m")) == (None, None)
        assert heard == ["m", "m", "m"]
        stop_listening()
        await joined(fake, "n")
        await until(engager, n="https://10.0.0.1:6443")
        assert heard == ["m", "m", "m"]


# --- Push and Pull ------------------------------------------------------------------------------


def pull_cluster(name: str) -> dict[str, Any]:
    """A Cluster as an agent registers it: Pull, an endpoint, no secretRef."""
    created = cluster(name, "https://behind-nat.example", syncMode=SYNC_MODE_PULL)
    del created["spec"]["secretRef"]
    return created


async def switched(fake: FakeClient, name: str, mode: str) -> None:
    current = await fake.get(CLUSTER_GVK, name)
    await fake.update({**current, "spec": {**current["spec"], "syncMode": mode}})


@asyncio_test
async def test_a_pull_cluster_is_neither_engaged_nor_a_problem() -> None:
    # Karmada's controller-manager never reaches a Pull member: it needs no Secret, and the
    # rules of a Push connection (no secretRef → SecretRefNotAllowed here) are not its to break.
    fake = host()
    await fake.create(pull_cluster("far"))
    await joined(fake, "near", "https://near.example")
    engager = RecordingEngager()
    provider = ClusterProvider(fake)
    heard: list[str] = []
    provider.on_change(heard.append)
    with capture_logs() as logs:
        async with running(provider, engager):
            assert engager.hosts() == {"near": "https://near.example"}
            assert provider.problem("far") is None
            assert heard == ["near"]
    assert refusals(logs) == []
    assert engager.take() == [("engage", "near")]


@asyncio_test
async def test_an_engaged_cluster_switched_to_pull_is_disengaged_and_back_to_push_engaged() -> None:
    fake = host()
    await joined(fake, "m", "https://m.example")
    engager = RecordingEngager()
    provider = ClusterProvider(fake)
    heard: list[str] = []
    provider.on_change(heard.append)
    async with running(provider, engager):
        assert heard == ["m"]
        await switched(fake, "m", SYNC_MODE_PULL)
        await until(engager)
        assert (provider.engaged, provider.problem("m"), provider.token_lifetime("m")) == (
            frozenset(),
            None,
            None,
        )
        assert heard == ["m", "m"]
        await switched(fake, "m", SYNC_MODE_PUSH)
        await until(engager, m="https://m.example")
        assert heard == ["m", "m", "m"]
    assert engager.take() == [("engage", "m"), ("disengage", "m"), ("engage", "m")]


@asyncio_test
async def test_a_refused_cluster_switched_to_pull_loses_its_problem_and_says_so() -> None:
    fake = host()
    await fake.create(pull_cluster("m"))
    await switched(fake, "m", SYNC_MODE_PUSH)  # a Push Cluster without secretRef: refused
    engager = RecordingEngager()
    provider = ClusterProvider(fake)
    heard: list[str] = []
    provider.on_change(heard.append)
    async with running(provider, engager):
        problem = provider.problem("m")
        assert problem is not None
        assert problem.reason == SECRET_REF_NOT_ALLOWED
        await switched(fake, "m", SYNC_MODE_PULL)

        async def cleared() -> bool:
            return provider.problem("m") is None and heard == ["m", "m"]

        await eventually(cleared, timeout=10)
    assert engager.calls == []


@asyncio_test
async def test_scoped_to_one_cluster_only_that_one_is_engaged_whatever_its_mode() -> None:
    # An agent's scope: its own Cluster (registered Pull), none of the others.
    fake = host()
    created = await fake.create(cluster("mine", "https://mine.example", syncMode=SYNC_MODE_PULL))
    await fake.create(secret(created))
    await joined(fake, "other", "https://other.example")
    await fake.create(cluster("broken", "http://broken.example"))
    engager = RecordingEngager()
    provider = ClusterProvider(fake, scope=ClusterScope.only("mine"))
    with capture_logs() as logs:
        async with running(provider, engager):
            assert engager.hosts() == {"mine": "https://mine.example"}
            assert provider.problem("broken") is None
    assert refusals(logs) == []
