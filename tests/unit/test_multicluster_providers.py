"""The providers of reconcile.multicluster and testenv's FakeClusters, each driving a recording
Engager: what they engage (name, config or client), re-engage and disengage, what they refuse."""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from structlog.testing import capture_logs

from reconcile import GVK
from reconcile.multicluster import Engager, KubeconfigProvider, Provider, SecretProvider
from reconcile.multicluster.secrets import CLUSTER_API_LABEL
from testenv import FakeClient, FakeClusters, eventually
from tests.builders import RecordingEngager

asyncio_test = pytest.mark.asyncio(loop_scope="session")

NAMESPACE = "clusters"


def kubeconfig(
    servers: dict[str, str], *, current: str | None = None, **user: Any
) -> dict[str, Any]:
    """A kubeconfig with one context (and cluster) per entry of ``servers``, one token user."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": s}} for n, s in servers.items()],
        "users": [{"name": "admin", "user": user or {"token": "s3cret-token"}}],
        "contexts": [{"name": n, "context": {"cluster": n, "user": "admin"}} for n in servers],
        "current-context": current if current is not None else next(iter(servers), ""),
    }


def write(path: Path, document: dict[str, Any] | str) -> None:
    text = document if isinstance(document, str) else yaml.safe_dump(document)
    path.write_text(text)
    # Two writes within the file system's timestamp granularity would look unchanged.
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))


def warnings(logs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["log_level"] == "warning"]


def test_the_providers_are_providers() -> None:
    # The protocols are structural: mypy checks these assignments.
    engager: Engager = RecordingEngager()
    providers: list[Provider] = [KubeconfigProvider("."), FakeClusters()]
    assert engager is not None
    assert len(providers) == 2


# --- KubeconfigProvider: a directory --------------------------------------------------------------


@asyncio_test
async def test_a_directory_engages_a_cluster_per_file_named_after_its_stem(tmp_path: Path) -> None:
    write(tmp_path / "east.yaml", kubeconfig({"ctx": "https://east.example:6443"}))
    write(tmp_path / "west.kubeconfig", kubeconfig({"ctx": "https://west.example:6443"}))
    write(tmp_path / "plain", kubeconfig({"ctx": "https://plain.example"}))
    for ignored in (".hidden", "#east.yaml#", "east.yaml~", ".east.yaml.swp", "x.tmp", "y.part"):
        write(tmp_path / ignored, kubeconfig({"ctx": "https://ignored.example"}))
    (tmp_path / "subdir").mkdir()
    (tmp_path / "..data").mkdir()  # a mounted Secret's link farm
    engager = RecordingEngager()

    await KubeconfigProvider(tmp_path).poll(engager)

    assert engager.hosts() == {
        "east": "https://east.example:6443",
        "west": "https://west.example:6443",
        "plain": "https://plain.example",
    }


@asyncio_test
async def test_a_directory_follows_new_changed_and_removed_files(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", kubeconfig({"c": "https://a1.example"}))
    write(tmp_path / "b.yaml", kubeconfig({"c": "https://b.example"}))
    provider, engager = KubeconfigProvider(tmp_path), RecordingEngager()
    await provider.poll(engager)
    assert sorted(engager.take()) == [("engage", "a"), ("engage", "b")]

    write(tmp_path / "a.yaml", kubeconfig({"c": "https://a2.example"}))  # changed
    write(tmp_path / "c.yaml", kubeconfig({"c": "https://c.example"}))  # new
    (tmp_path / "b.yaml").unlink()  # removed
    await provider.poll(engager)

    assert sorted(engager.take()) == [("disengage", "b"), ("engage", "a"), ("engage", "c")]
    assert engager.hosts() == {"a": "https://a2.example", "c": "https://c.example"}
    assert provider.engaged == {"a", "c"}


@asyncio_test
async def test_an_unchanged_or_only_touched_file_is_not_engaged_again(tmp_path: Path) -> None:
    document = kubeconfig({"c": "https://a.example"})
    write(tmp_path / "a.yaml", document)
    provider, engager = KubeconfigProvider(tmp_path), RecordingEngager()
    await provider.poll(engager)
    engager.take()

    await provider.poll(engager)
    write(tmp_path / "a.yaml", document)  # same content, new mtime
    await provider.poll(engager)

    assert engager.take() == []


@asyncio_test
async def test_a_malformed_file_is_logged_once_and_the_others_stay(tmp_path: Path) -> None:
    write(tmp_path / "good.yaml", kubeconfig({"c": "https://good.example"}))
    write(tmp_path / "bad.yaml", kubeconfig({"c": "https://bad1.example"}))
    provider, engager = KubeconfigProvider(tmp_path), RecordingEngager()
    await provider.poll(engager)
    engager.take()

    # A broken YAML line holding a credential: the log names the file, not the line.
    write(tmp_path / "bad.yaml", "users:\n- name: x\n  user: {token: hunter2-value\n")
    with capture_logs() as logs:
        await provider.poll(engager)
        await provider.poll(engager)  # unchanged: not logged again

    assert engager.take() == [("disengage", "bad")]
    assert engager.hosts() == {"good": "https://good.example"}
    [warning] = warnings(logs)
    assert str(tmp_path / "bad.yaml") in str(warning)
    assert "line 4" in warning["error"]
    assert "hunter2" not in str(logs)

    write(tmp_path / "bad.yaml", kubeconfig({"c": "https://bad2.example"}))
    await provider.poll(engager)
    assert engager.hosts()["bad"] == "https://bad2.example"


@asyncio_test
async def test_a_file_too_large_is_skipped_unread_and_the_others_stay(tmp_path: Path) -> None:
    from reconcile.multicluster.kubeconfigs import MAX_KUBECONFIG_BYTES

    write(tmp_path / "good.yaml", kubeconfig({"c": "https://good.example"}))
    huge = yaml.safe_dump(kubeconfig({"c": "https://huge.example"})) + "#" * MAX_KUBECONFIG_BYTES
    write(tmp_path / "huge.yaml", huge)
    provider, engager = KubeconfigProvider(tmp_path), RecordingEngager()
    with capture_logs() as logs:
        await provider.poll(engager)
    assert engager.hosts() == {"good": "https://good.example"}
    [warning] = warnings(logs)
    assert str(tmp_path / "huge.yaml") in str(warning)
    assert "larger than" in warning["error"]


@asyncio_test
async def test_an_unusable_kubeconfig_is_logged_once_per_change(tmp_path: Path) -> None:
    no_context = kubeconfig({"c": "https://a.example"}, current="")
    write(tmp_path / "a.yaml", no_context)
    provider, engager = KubeconfigProvider(tmp_path), RecordingEngager()
    with capture_logs() as logs:
        await provider.poll(engager)
        await provider.poll(engager)
    [warning] = warnings(logs)
    assert warning["cluster"] == "a"
    assert "current-context is not set" in warning["error"]
    assert "s3cret" not in str(logs)
    assert engager.take() == []

    write(tmp_path / "a.yaml", kubeconfig({"c": "https://a.example"}, current="c"))
    await provider.poll(engager)
    assert engager.take() == [("engage", "a")]


@asyncio_test
async def test_two_files_of_one_stem_engage_the_first_by_name(tmp_path: Path) -> None:
    write(tmp_path / "p.kubeconfig", kubeconfig({"c": "https://first.example"}))
    write(tmp_path / "p.yaml", kubeconfig({"c": "https://second.example"}))
    engager = RecordingEngager()
    await KubeconfigProvider(tmp_path).poll(engager)
    assert engager.hosts() == {"p": "https://first.example"}


@asyncio_test
async def test_a_refusing_engager_does_not_stop_the_others(tmp_path: Path) -> None:
    write(tmp_path / "taken.yaml", kubeconfig({"c": "https://taken.example"}))
    write(tmp_path / "free.yaml", kubeconfig({"c": "https://free.example"}))
    engager = RecordingEngager(refuse=("taken",))
    provider = KubeconfigProvider(tmp_path)
    with capture_logs() as logs:
        await provider.poll(engager)
        await provider.poll(engager)
    assert engager.engaged == {"free"}
    assert provider.engaged == {"free"}
    assert [w["cluster"] for w in warnings(logs)] == ["taken"]


# --- KubeconfigProvider: one file -----------------------------------------------------------------


@asyncio_test
async def test_a_file_engages_each_context_and_re_engages_only_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "config"
    servers = {"one": "https://one.example", "two": "https://two.example"}
    write(path, kubeconfig(servers))
    provider, engager = KubeconfigProvider(path), RecordingEngager()
    await provider.poll(engager)
    assert engager.hosts() == servers
    engager.take()

    write(
        path, kubeconfig({**servers, "two": "https://two-b.example", "three": "https://3.example"})
    )
    await provider.poll(engager)
    assert sorted(engager.take()) == [("engage", "three"), ("engage", "two")]

    write(path, kubeconfig({"three": "https://3.example"}))
    await provider.poll(engager)
    assert sorted(engager.take()) == [("disengage", "one"), ("disengage", "two")]


@asyncio_test
async def test_a_removed_file_disengages_its_clusters(tmp_path: Path) -> None:
    path = tmp_path / "config"
    write(path, kubeconfig({"one": "https://one.example"}))
    provider, engager = KubeconfigProvider(path), RecordingEngager()
    await provider.poll(engager)
    path.unlink()
    with capture_logs() as logs:
        await provider.poll(engager)
        await provider.poll(engager)
    assert engager.take() == [("engage", "one"), ("disengage", "one")]
    assert len(warnings(logs)) == 1
    assert "does not exist" in warnings(logs)[0]["event"]


@asyncio_test
async def test_run_engages_before_started_polls_and_stops(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", kubeconfig({"c": "https://a.example"}))
    provider, engager = KubeconfigProvider(tmp_path, interval=0.05), RecordingEngager()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            await group.start(provider.run, engager)
            assert engager.engaged == {"a"}
            write(tmp_path / "b.yaml", kubeconfig({"c": "https://b.example"}))

            async def both() -> bool:
                return engager.engaged == {"a", "b"}

            await eventually(both)
            provider.stop()  # run returns: the task group can end without a cancel


def test_a_non_positive_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="interval"):
        KubeconfigProvider(".", interval=0)


# --- SecretProvider on the fake -------------------------------------------------------------------


def secret(
    name: str,
    document: dict[str, Any] | str | None,
    *,
    labels: dict[str, str] | None = None,
    key: str = "value",
) -> dict[str, Any]:
    """A Secret holding ``document`` under ``key``, labelled as Cluster API does by default."""
    if labels is None:
        labels = {CLUSTER_API_LABEL: name.removesuffix("-kubeconfig")}
    data = {}
    if document is not None:
        text = document if isinstance(document, str) else yaml.safe_dump(document)
        data[key] = base64.b64encode(text.encode()).decode()
    meta = {"name": name, "namespace": NAMESPACE, "labels": labels}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": data}


@asynccontextmanager
@asyncio_test
async def running(provider: SecretProvider, engager: RecordingEngager) -> AsyncIterator[None]:
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            await group.start(provider.run, engager)
            yield
            group.cancel_scope.cancel()


@asyncio_test
async def until(engager: RecordingEngager, *names: str) -> None:
    """Wait until exactly ``names`` are engaged."""

    async def probe() -> bool:
        return engager.engaged == set(names)

    await eventually(probe, timeout=10)


@asyncio_test
async def test_secrets_of_the_cluster_api_convention_are_engaged() -> None:
    fake = FakeClient()
    fake.seed(
        secret("east-kubeconfig", kubeconfig({"c": "https://east.example"})),
        secret("east-ca", kubeconfig({"c": "https://not-a-kubeconfig.example"})),
        secret("west-kubeconfig", kubeconfig({"c": "https://west.example"}), labels={}),
    )
    fake.seed({**secret("far-kubeconfig", kubeconfig({"c": "https://far.example"}))})
    engager = RecordingEngager()
    provider = SecretProvider(fake, NAMESPACE)
    async with running(provider, engager):
        # Engaged before run reported started; -ca shares the label but not the suffix,
        # and the unlabelled Secret is not selected.
        assert engager.hosts() == {"east": "https://east.example", "far": "https://far.example"}
        assert provider.engaged == {"east", "far"}


@asyncio_test
async def test_secret_changes_re_engage_and_deletion_disengages() -> None:
    fake = FakeClient()
    engager = RecordingEngager()
    async with running(SecretProvider(fake, NAMESPACE), engager):
        assert engager.engaged == set()
        created = await fake.create(secret("a-kubeconfig", kubeconfig({"c": "https://a1.example"})))
        await until(engager, "a")

        changed = secret("a-kubeconfig", kubeconfig({"c": "https://a2.example"}))
        changed["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
        await fake.update(changed)

        async def re_engaged() -> bool:
            return engager.hosts().get("a") == "https://a2.example"

        await eventually(re_engaged)
        await fake.delete(changed)
        await until(engager)
        assert engager.take() == [("engage", "a"), ("engage", "a"), ("disengage", "a")]


REFUSED: dict[str, dict[str, Any]] = {
    "exec": {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/true"}},
    "auth-provider": {"auth-provider": {"name": "oidc"}},
    "tokenFile": {"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"},
    "client-certificate": {"client-certificate": "/etc/key.crt", "client-key": "/etc/key.pem"},
}


@pytest.mark.parametrize("setting", sorted(REFUSED))
@asyncio_test
async def test_a_secret_kubeconfig_that_reaches_outside_its_text_is_refused(setting: str) -> None:
    fake = FakeClient()
    fake.seed(
        secret("bad-kubeconfig", kubeconfig({"c": "https://bad.example"}, **REFUSED[setting]))
    )
    engager = RecordingEngager()
    with capture_logs() as logs:
        async with running(SecretProvider(fake, NAMESPACE), engager):
            pass
    assert engager.engaged == set()
    [warning] = warnings(logs)
    assert warning["secret"] == f"{NAMESPACE}/bad-kubeconfig"
    assert setting in warning["error"]
    assert "/etc/key" not in str(logs)
    assert "serviceaccount" not in str(logs)


@pytest.mark.parametrize(
    ("cluster", "refused"),
    [
        ({"certificate-authority": "/etc/ssl/ca.pem"}, "certificate-authority"),
        ({"insecure-skip-tls-verify": True}, "skip TLS verification"),
    ],
)
@asyncio_test
async def test_a_secret_cluster_entry_with_a_file_or_without_tls_is_refused(
    cluster: dict[str, Any], refused: str
) -> None:
    document = kubeconfig({"c": "https://bad.example"})
    document["clusters"][0]["cluster"].update(cluster)
    fake = FakeClient()
    fake.seed(secret("bad-kubeconfig", document))
    engager = RecordingEngager()
    with capture_logs() as logs:
        async with running(SecretProvider(fake, NAMESPACE), engager):
            pass
    assert engager.engaged == set()
    [warning] = warnings(logs)
    assert refused in warning["error"]


@asyncio_test
async def test_a_refusal_is_logged_once_per_version_and_spares_the_others() -> None:
    fake = FakeClient()
    bad = fake.seed(secret("bad-kubeconfig", "not: [yaml"))[0]
    fake.seed(secret("good-kubeconfig", kubeconfig({"c": "https://good.example"})))
    engager = RecordingEngager()
    provider = SecretProvider(fake, NAMESPACE)
    with capture_logs() as logs:
        async with running(provider, engager):
            assert engager.engaged == {"good"}
            # The same version delivered again (a relist, a resync) is not handled again...
            provider.informer.apply("MODIFIED", bad)
            await fake.create(secret("marker-kubeconfig", kubeconfig({"c": "https://m.example"})))
            await until(engager, "good", "marker")
            assert len(warnings(logs)) == 1
            # ...a new version is.
            bad["metadata"]["labels"]["touched"] = "yes"
            await fake.update(bad)

            async def logged_again() -> bool:
                return len(warnings(logs)) == 2

            await eventually(logged_again)
    assert {w["secret"] for w in warnings(logs)} == {f"{NAMESPACE}/bad-kubeconfig"}
    assert engager.engaged == {"good", "marker"}


@asyncio_test
async def test_an_engaged_cluster_whose_secret_turns_bad_is_disengaged() -> None:
    fake = FakeClient()
    created = fake.seed(secret("a-kubeconfig", kubeconfig({"c": "https://a.example"})))[0]
    engager = RecordingEngager()
    async with running(SecretProvider(fake, NAMESPACE), engager):
        assert engager.engaged == {"a"}
        exec_user = REFUSED["exec"]
        bad = secret("a-kubeconfig", kubeconfig({"c": "https://a.example"}, **exec_user))
        bad["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
        await fake.update(bad)
        await until(engager)


@pytest.mark.parametrize(
    ("data", "problem"),
    [(None, "no such data key"), ("%%%", "not base64"), ("", "no such data key")],
)
@asyncio_test
async def test_a_secret_without_a_readable_kubeconfig_is_refused(
    data: str | None, problem: str
) -> None:
    broken = secret("x-kubeconfig", None)
    if data is not None:
        broken["data"] = {"value": data}
    fake = FakeClient()
    fake.seed(broken)
    engager = RecordingEngager()
    with capture_logs() as logs:
        async with running(SecretProvider(fake, NAMESPACE), engager):
            pass
    [warning] = warnings(logs)
    assert problem in warning["error"]
    assert engager.engaged == set()


@asyncio_test
async def test_the_multicluster_runtime_convention() -> None:
    fake = FakeClient()
    label = {"sigs.k8s.io/multicluster-runtime-kubeconfig": "true"}
    fake.seed(
        secret(
            "cluster1", kubeconfig({"c": "https://one.example"}), labels=label, key="kubeconfig"
        ),
        secret("cluster2", kubeconfig({"c": "https://two.example"}), labels={}, key="kubeconfig"),
    )
    engager = RecordingEngager()
    async with running(SecretProvider.multicluster_runtime(fake, NAMESPACE), engager):
        assert engager.hosts() == {"cluster1": "https://one.example"}


@asyncio_test
async def test_only_the_given_namespace_is_watched() -> None:
    fake = FakeClient()
    elsewhere = secret("x-kubeconfig", kubeconfig({"c": "https://x.example"}))
    elsewhere["metadata"]["namespace"] = "other"
    fake.seed(elsewhere)
    engager = RecordingEngager()
    async with running(SecretProvider(fake, NAMESPACE), engager):
        assert engager.engaged == set()


def test_the_secret_provider_needs_a_namespace_and_a_key() -> None:
    with pytest.raises(ValueError, match="namespace"):
        SecretProvider(FakeClient(), "")
    with pytest.raises(ValueError, match="key"):
        SecretProvider(FakeClient(), NAMESPACE, key="")


# --- FakeClusters ---------------------------------------------------------------------------------


@asyncio_test
async def test_fake_clusters_engage_each_client_and_follow_adds_and_removes() -> None:
    clusters = FakeClusters(["one", "two"])
    engager = RecordingEngager()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            await group.start(clusters.run, engager)
            assert engager.clients == {"one": clusters["one"], "two": clusters["two"]}

            three = clusters.add("three")
            clusters.remove("one")
            await clusters.settled()
            assert engager.clients == {"two": clusters["two"], "three": three}
            assert clusters.engaged == {"two", "three"}
            assert "one" not in clusters
            group.cancel_scope.cancel()


@asyncio_test
async def test_fake_clusters_are_separate_clusters() -> None:
    seeded = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "d"}}

    def factory(name: str) -> FakeClient:
        return FakeClient(objects=[seeded]) if name == "seeded" else FakeClient()

    clusters = FakeClusters(["seeded", "empty"], factory=factory)
    cm = GVK("", "v1", "ConfigMap")
    assert [o["metadata"]["name"] for o in await clusters["seeded"].list_all(cm)] == ["cm"]
    assert await clusters["empty"].list_all(cm) == []
    assert sorted(clusters) == ["empty", "seeded"]
    assert len(clusters) == 2


def test_fake_clusters_refuse_bad_names() -> None:
    clusters = FakeClusters(["one"])
    with pytest.raises(ValueError, match="already exists"):
        clusters.add("one")
    with pytest.raises(ValueError, match="needs a name"):
        clusters.add("")
    with pytest.raises(KeyError, match="no fake cluster"):
        clusters.remove("two")
