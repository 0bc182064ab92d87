"""The client against the real kube-apiserver: verbs, patch types, subresources, errors, watches."""

from __future__ import annotations

import base64
import secrets
import traceback
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
import pytest_asyncio
import structlog
import yaml
from aiohttp import ClientResponseError, web

from reconcile.cache.informer import SharedInformer
from reconcile.client.client import (
    Client,
    ListerWatcher,
    PatchType,
    Preconditions,
    Reader,
    WatchEvents,
)
from reconcile.client.config import ClusterConfig, ConfigError
from reconcile.client.credentials import Credentials
from reconcile.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Invalid,
    NoKindMatch,
    NotFound,
    TooManyRequests,
    Unauthorized,
)
from reconcile.flowcontrol import RetryAfter, TokenBucket, Unlimited
from reconcile.gvk import GVK
from testenv import ControlPlane, eventually
from tests.builders import FakeClock, configmap, deployment, service_account_token

pytestmark = pytest.mark.asyncio(loop_scope="session")

TESTDATA = Path(__file__).parent / "testdata"
WIDGET_CRD = TESTDATA / "widget-crd.yaml"

CONFIGMAP = GVK("", "v1", "ConfigMap")
NAMESPACE = GVK("", "v1", "Namespace")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
WIDGET = GVK("client.test", "v1", "Widget")
SECRET = GVK("", "v1", "Secret")


async def _client_for(kubeconfig: Path, scratch: Path, **options: Any) -> Client:
    config = await ClusterConfig.from_kubeconfig(kubeconfig, temp_dir=scratch)
    return Client(config, **options)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def widgets(host: ControlPlane) -> None:
    await host.install_crds([WIDGET_CRD])


def widget(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "client.test/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


# Reads and whole-object writes.


async def test_create_get_update_list_round_trip(client: Client, namespace: str) -> None:
    created = await client.create(configmap("one", namespace, colour="red"))
    assert created["metadata"]["uid"]
    assert created["data"] == {"colour": "red"}

    got = await client.get(CONFIGMAP, "one", namespace=namespace)
    assert got == created
    got["data"]["colour"] = "blue"
    updated = await client.update(got)
    assert updated["data"] == {"colour": "blue"}
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]

    listing = await client.list(CONFIGMAP, namespace=namespace)
    assert listing["kind"] == "ConfigMapList"
    assert listing["metadata"]["resourceVersion"]
    [item] = [i for i in listing["items"] if i["metadata"]["name"] == "one"]
    # Built-in list items come without apiVersion/kind on the wire; the client fills them in.
    assert (item["apiVersion"], item["kind"]) == ("v1", "ConfigMap")
    assert item["data"] == {"colour": "blue"}


async def test_every_write_names_the_field_manager(client: Client, namespace: str) -> None:
    created = await client.create(configmap("managed", namespace, a="1"))
    managers = {entry["manager"] for entry in created["metadata"]["managedFields"]}
    assert managers == {"reconcile"}
    patched = await client.patch(created, {"data": {"b": "2"}}, field_manager="other-tool")
    managers = {entry["manager"] for entry in patched["metadata"]["managedFields"]}
    assert managers == {"reconcile", "other-tool"}


async def test_generate_name_and_dry_run(client: Client, namespace: str) -> None:
    template = configmap("", namespace)
    template["metadata"] = {"generateName": "gen-", "namespace": namespace}
    created = await client.create(template)
    assert created["metadata"]["name"].startswith("gen-")

    dry = await client.create(configmap("dry", namespace), dry_run=True)
    assert dry["metadata"]["name"] == "dry"
    with pytest.raises(NotFound):
        await client.get(CONFIGMAP, "dry", namespace=namespace)


async def test_cluster_scoped_kinds_need_no_namespace(client: Client, namespace: str) -> None:
    got = await client.get(NAMESPACE, namespace)
    assert got["kind"] == "Namespace"
    listing = await client.list(
        NAMESPACE, label_selector={"kubernetes.io/metadata.name": namespace}
    )
    assert [item["metadata"]["name"] for item in listing["items"]] == [namespace]


async def test_namespaced_kind_without_namespace_is_refused_locally(client: Client) -> None:
    with pytest.raises(ValueError, match="namespaced"):
        await client.get(CONFIGMAP, "anything")
    with pytest.raises(ValueError, match="namespaced"):
        await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    with pytest.raises(ValueError, match="namespaced"):
        await client.delete_all_of(CONFIGMAP, label_selector="app=x")


async def test_the_live_client_is_a_reader(client: Client, namespace: str) -> None:
    reader: Reader = client
    await client.create(configmap("read-me", namespace))
    assert (await reader.get(CONFIGMAP, "read-me", namespace=namespace))["metadata"]["uid"]


# Typed errors.


async def test_errors_are_typed_by_status_reason(client: Client, namespace: str) -> None:
    with pytest.raises(NotFound) as missing:
        await client.get(CONFIGMAP, "absent", namespace=namespace)
    assert missing.value.code == 404
    assert missing.value.details["name"] == "absent"
    assert "absent" in missing.value.message
    # The HTTP error that carried it is chained, with the request it answered.
    assert missing.value.__cause__ is not None
    assert "/configmaps/absent" in str(missing.value.__cause__)

    await client.create(configmap("taken", namespace))
    with pytest.raises(AlreadyExists) as taken:
        await client.create(configmap("taken", namespace))
    assert taken.value.code == 409

    with pytest.raises(Invalid) as invalid:
        await client.create(configmap("Not_A_Valid_Name", namespace))
    assert invalid.value.details["causes"]


async def test_stale_update_is_a_conflict(client: Client, namespace: str) -> None:
    first = await client.create(configmap("contended", namespace, v="1"))
    fresh = await client.get(CONFIGMAP, "contended", namespace=namespace)
    fresh["data"]["v"] = "2"
    await client.update(fresh)
    first["data"]["v"] = "3"
    with pytest.raises(Conflict) as stale:
        await client.update(first)
    assert stale.value.reason == "Conflict"
    assert (await client.get(CONFIGMAP, "contended", namespace=namespace))["data"] == {"v": "2"}


async def test_user_without_rbac_is_forbidden(host: ControlPlane, namespace: str) -> None:
    user = await host.add_user(f"nobody-{secrets.token_hex(3)}")
    async with await _client_for(user.kubeconfig, host.directory / "client") as denied:
        # Discovery is open to every authenticated user; the objects are not.
        with pytest.raises(Forbidden) as refused:
            await denied.list(CONFIGMAP, namespace=namespace)
        assert refused.value.code == 403
        assert user.name in refused.value.message
        with pytest.raises(Forbidden):
            await denied.create(configmap("nope", namespace))
        with pytest.raises(Forbidden):
            async with denied.watch(CONFIGMAP, namespace=namespace, timeout_seconds=5):
                pytest.fail("the watch should have been refused")


async def test_unknown_kind_is_no_kind_match(client: Client, namespace: str) -> None:
    with pytest.raises(NoKindMatch):
        await client.get(GVK("", "v1", "NoSuchKind"), "x", namespace=namespace)
    with pytest.raises(NoKindMatch):
        await client.list(GVK("nowhere.client.test", "v1", "Thing"))


# Patches.


async def test_merge_patch_by_object_and_by_name(client: Client, namespace: str) -> None:
    created = await client.create(configmap("merge", namespace, keep="1", drop="2"))
    patched = await client.patch(created, {"data": {"drop": None, "new": "3"}})
    assert patched["data"] == {"keep": "1", "new": "3"}
    again = await client.patch(CONFIGMAP, "merge", {"data": {"keep": "9"}}, namespace=namespace)
    assert again["data"] == {"keep": "9", "new": "3"}


async def test_a_metadata_only_patch_is_answered_with_the_metadata(
    client: Client, namespace: str, widgets: None
) -> None:
    created = await client.create(configmap("meta-patch", namespace, big="x" * 4096))
    answer = await client.patch(created, {"metadata": {"labels": {"a": "b"}}}, metadata_only=True)
    assert answer["kind"] == "PartialObjectMetadata"
    assert answer["metadata"]["labels"] == {"a": "b"}
    assert "data" not in answer, "the apiserver sent the metadata only"
    stored = await client.get(CONFIGMAP, "meta-patch", namespace=namespace)
    assert stored["data"]["big"] == "x" * 4096
    assert stored["metadata"]["resourceVersion"] == answer["metadata"]["resourceVersion"]
    # A custom resource too (the sharder labels Works so).
    mine = await client.create(widget("meta", namespace, colour="red"))
    patched = await client.patch(mine, {"metadata": {"labels": {"a": "b"}}}, metadata_only=True)
    assert patched["kind"] == "PartialObjectMetadata"
    assert "spec" not in patched


async def test_json_patch_with_a_failing_test_operation(client: Client, namespace: str) -> None:
    await client.create(configmap("jsonpatch", namespace, a="1"))
    operations = [
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "replace", "path": "/data/a", "value": "2"},
        {"op": "add", "path": "/data/b", "value": "3"},
    ]
    patched = await client.patch(
        CONFIGMAP, "jsonpatch", operations, namespace=namespace, patch_type=PatchType.JSON
    )
    assert patched["data"] == {"a": "2", "b": "3"}
    # The same patch again fails its test: "a" is no longer "1"; nothing changes.
    with pytest.raises(Invalid):
        await client.patch(
            CONFIGMAP, "jsonpatch", operations, namespace=namespace, patch_type=PatchType.JSON
        )
    assert (await client.get(CONFIGMAP, "jsonpatch", namespace=namespace))["data"]["a"] == "2"


async def test_strategic_merge_patch_merges_containers_by_name(
    client: Client, namespace: str
) -> None:
    created = await client.create(deployment("web", namespace))
    sidecar = {"name": "sidecar", "image": "busybox:1.36"}
    patch = {"spec": {"template": {"spec": {"containers": [sidecar]}}}}
    strategic = await client.patch(created, patch, patch_type=PatchType.STRATEGIC)
    names = [c["name"] for c in strategic["spec"]["template"]["spec"]["containers"]]
    assert names == ["sidecar", "nginx"]
    # A JSON merge patch of the same body replaces the list instead.
    merged = await client.patch(created, patch, patch_type=PatchType.MERGE)
    assert [c["name"] for c in merged["spec"]["template"]["spec"]["containers"]] == ["sidecar"]


async def test_strategic_merge_patch_is_refused_for_custom_resources(
    client: Client, namespace: str, widgets: None
) -> None:
    created = await client.create(widget("plain", namespace, colour="red"))
    with pytest.raises(ApiError) as refused:
        await client.patch(created, {"spec": {"colour": "blue"}}, patch_type=PatchType.STRATEGIC)
    assert refused.value.code == 415


async def test_server_side_apply_conflicts_and_force(client: Client, namespace: str) -> None:
    desired = configmap("applied", namespace, owner="alpha")
    created = await client.apply(desired, field_manager="alpha")
    assert created["data"] == {"owner": "alpha"}
    # Re-applying what is already there is a no-op for the same manager.
    again = await client.apply(created, field_manager="alpha")
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    contested = configmap("applied", namespace, owner="beta")
    with pytest.raises(Conflict) as conflict:
        await client.apply(contested, field_manager="beta")
    assert "alpha" in conflict.value.message
    assert conflict.value.details["causes"][0]["field"] == ".data.owner"

    forced = await client.apply(contested, field_manager="beta", force=True)
    assert forced["data"] == {"owner": "beta"}
    owners = {
        entry["manager"]
        for entry in forced["metadata"]["managedFields"]
        if "f:owner" in str(entry.get("fieldsV1", {}))
    }
    assert owners == {"beta"}


async def test_force_is_only_for_apply(client: Client, namespace: str) -> None:
    created = await client.create(configmap("no-force", namespace))
    with pytest.raises(ValueError, match="force"):
        await client.patch(created, {"data": {"a": "b"}}, force=True)


# Deletes.


async def test_delete_with_preconditions(client: Client, namespace: str) -> None:
    created = await client.create(configmap("guarded", namespace))
    with pytest.raises(Conflict):
        await client.delete(created, preconditions=Preconditions(uid="not-the-uid"))
    await client.patch(created, {"data": {"changed": "yes"}})
    # The resourceVersion we read is stale now: deleting "exactly what we saw" must fail.
    with pytest.raises(Conflict):
        await client.delete(created, preconditions=Preconditions.of(created))
    current = await client.get(CONFIGMAP, "guarded", namespace=namespace)
    await client.delete(current, preconditions=Preconditions.of(current))
    with pytest.raises(NotFound):
        await client.get(CONFIGMAP, "guarded", namespace=namespace)
    with pytest.raises(NotFound):
        await client.delete(CONFIGMAP, "guarded", namespace=namespace)


async def test_delete_waits_for_finalizers(client: Client, namespace: str) -> None:
    held = configmap("held", namespace)
    held["metadata"]["finalizers"] = ["client.test/hold"]
    await client.create(held)
    answer = await client.delete(CONFIGMAP, "held", namespace=namespace)
    assert answer["metadata"]["deletionTimestamp"]
    still = await client.get(CONFIGMAP, "held", namespace=namespace)
    assert still["metadata"]["finalizers"] == ["client.test/hold"]
    await client.patch(still, {"metadata": {"finalizers": None}})
    with pytest.raises(NotFound):
        await client.get(CONFIGMAP, "held", namespace=namespace)


async def test_delete_options_reach_the_server(client: Client, namespace: str) -> None:
    await client.create(configmap("kept", namespace))
    await client.delete(CONFIGMAP, "kept", namespace=namespace, dry_run=True)
    assert await client.get(CONFIGMAP, "kept", namespace=namespace)
    answer = await client.delete(
        CONFIGMAP,
        "kept",
        namespace=namespace,
        propagation_policy="Foreground",
        grace_period_seconds=0,
    )
    # Foreground deletion parks the object behind the garbage collector's finalizer; testenv runs
    # no garbage collector, so it stays there: proof the policy reached the server.
    assert answer["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert answer["metadata"]["deletionTimestamp"]
    orphaned = await client.create(configmap("orphaned", namespace))
    answer = await client.delete(orphaned, propagation_policy="Orphan")
    assert answer["metadata"]["finalizers"] == ["orphan"]


async def test_delete_all_of_with_a_label_selector(client: Client, namespace: str) -> None:
    for name, app in [("a1", "a"), ("a2", "a"), ("b1", "b")]:
        obj = configmap(name, namespace)
        obj["metadata"]["labels"] = {"app": app}
        await client.create(obj)
    await client.create(configmap("unlabelled", namespace))
    await client.delete_all_of(CONFIGMAP, namespace=namespace, label_selector={"app": "a"})
    remaining = await client.list(CONFIGMAP, namespace=namespace)
    names = {item["metadata"]["name"] for item in remaining["items"]}
    assert {"b1", "unlabelled"} <= names
    assert not names & {"a1", "a2"}


# Lists: pagination, selectors, consistency.


async def test_list_pages_with_limit_and_continue(client: Client, namespace: str) -> None:
    for index in range(5):
        await client.create(configmap(f"page-{index}", namespace))
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page = await client.list(CONFIGMAP, namespace=namespace, limit=2, continue_=token)
        pages += 1
        assert len(page["items"]) <= 2
        seen += [item["metadata"]["name"] for item in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
    expected = {f"page-{index}" for index in range(5)}
    assert expected <= set(seen)
    assert len(seen) == len(set(seen))
    assert pages >= 3
    everything = await client.list_all(CONFIGMAP, namespace=namespace, page_size=2)
    assert {item["metadata"]["name"] for item in everything} == set(seen)


async def test_list_selectors(client: Client, namespace: str) -> None:
    for name, tier in [("front", "web"), ("back", "db")]:
        obj = configmap(name, namespace)
        obj["metadata"]["labels"] = {"tier": tier}
        await client.create(obj)
    web_only = await client.list(CONFIGMAP, namespace=namespace, label_selector="tier=web")
    assert [i["metadata"]["name"] for i in web_only["items"]] == ["front"]
    not_web = await client.list(CONFIGMAP, namespace=namespace, label_selector="tier,tier!=web")
    assert [i["metadata"]["name"] for i in not_web["items"]] == ["back"]
    by_name = await client.list(
        CONFIGMAP, namespace=namespace, field_selector={"metadata.name": "back"}
    )
    assert [i["metadata"]["name"] for i in by_name["items"]] == ["back"]


async def test_list_at_an_exact_resource_version(client: Client, namespace: str) -> None:
    await client.create(configmap("before", namespace))
    then = (await client.list(CONFIGMAP, namespace=namespace))["metadata"]["resourceVersion"]
    await client.create(configmap("after", namespace))
    past = await client.list(
        CONFIGMAP, namespace=namespace, resource_version=then, resource_version_match="Exact"
    )
    assert [i["metadata"]["name"] for i in past["items"]] == ["before"]
    now = await client.list(
        CONFIGMAP, namespace=namespace, resource_version=then, resource_version_match="NotOlderThan"
    )
    assert {i["metadata"]["name"] for i in now["items"]} == {"before", "after"}


# Subresources.


async def test_deployment_scale_subresource(client: Client, namespace: str) -> None:
    await client.create(deployment("scaled", namespace, replicas=1))
    scale = await client.get_scale(DEPLOYMENT, "scaled", namespace=namespace)
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 1

    patched = await client.patch_scale(
        DEPLOYMENT, "scaled", {"spec": {"replicas": 3}}, namespace=namespace
    )
    assert patched["spec"]["replicas"] == 3
    scale = await client.get_scale(DEPLOYMENT, "scaled", namespace=namespace)
    scale["spec"]["replicas"] = 5
    updated = await client.update_scale(DEPLOYMENT, scale)
    assert updated["spec"]["replicas"] == 5
    got = await client.get(DEPLOYMENT, "scaled", namespace=namespace)
    assert got["spec"]["replicas"] == 5
    # A Scale with a stale resourceVersion is refused like any stale write.
    with pytest.raises(Conflict):
        await client.update_scale(DEPLOYMENT, scale)


async def test_custom_resource_status_subresource(
    client: Client, namespace: str, widgets: None
) -> None:
    created = await client.create(widget("gizmo", namespace, colour="red"))
    assert created["spec"] == {"colour": "red", "replicas": 1}  # the schema default applied
    generation = created["metadata"]["generation"]

    created["status"] = {"phase": "Ready", "replicas": 1}
    created["spec"]["colour"] = "blue"  # ignored: /status writes only status
    updated = await client.update_status(created)
    assert updated["status"]["phase"] == "Ready"
    assert updated["spec"]["colour"] == "red"
    assert updated["metadata"]["generation"] == generation

    patched = await client.patch_status(updated, {"status": {"phase": "Degraded"}})
    assert patched["status"] == {"phase": "Degraded", "replicas": 1}
    by_name = await client.patch_status(
        WIDGET, "gizmo", {"status": {"replicas": 2}}, namespace=namespace
    )
    assert by_name["status"]["replicas"] == 2
    through_status = await client.get_status(WIDGET, "gizmo", namespace=namespace)
    assert through_status["status"] == {"phase": "Degraded", "replicas": 2}

    # The main resource ignores status, so spec writes never clobber it.
    spec_only = await client.patch(through_status, {"spec": {"colour": "green"}, "status": None})
    assert spec_only["status"] == {"phase": "Degraded", "replicas": 2}
    assert spec_only["metadata"]["generation"] == generation + 1


async def test_custom_resource_scale_subresource(
    client: Client, namespace: str, widgets: None
) -> None:
    await client.create(widget("scalable", namespace, replicas=2))
    await client.patch_status(
        WIDGET, "scalable", {"status": {"replicas": 2, "selector": "app=x"}}, namespace=namespace
    )
    scale = await client.get_scale(WIDGET, "scalable", namespace=namespace)
    assert scale["spec"]["replicas"] == 2
    assert scale["status"] == {"replicas": 2, "selector": "app=x"}
    await client.patch_scale(WIDGET, "scalable", {"spec": {"replicas": 4}}, namespace=namespace)
    assert (await client.get(WIDGET, "scalable", namespace=namespace))["spec"]["replicas"] == 4


async def test_custom_resource_validation_is_invalid(
    client: Client, namespace: str, widgets: None
) -> None:
    with pytest.raises(Invalid) as invalid:
        await client.create(widget("purple", namespace, colour="purple"))
    assert "spec.colour" in str(invalid.value.details["causes"])


async def test_restmapping_reports_scope_and_subresources(client: Client, widgets: None) -> None:
    widget_resource = await client.resource_for(WIDGET)
    assert (widget_resource.plural, widget_resource.namespaced) == ("widgets", True)
    assert widget_resource.subresources == {"status", "scale"}
    deployments = await client.resource_for(DEPLOYMENT)
    assert {"scale", "status"} <= deployments.subresources
    assert "patch" in deployments.verbs
    assert not (await client.resource_for(NAMESPACE)).namespaced
    assert (await client.mapper.resource_for_name("wdg")).gvk == WIDGET
    assert (await client.mapper.resource_for_name("deploy")).gvk == DEPLOYMENT


async def test_a_crd_installed_after_first_use_is_found(
    host: ControlPlane, client: Client, namespace: str, tmp_path: Path
) -> None:
    group = f"late-{secrets.token_hex(3)}.client.test"
    gadget = GVK(group, "v1", "Gadget")
    await client.create(configmap("first-use", namespace))
    with pytest.raises(NoKindMatch):
        await client.get(gadget, "g", namespace=namespace)

    crd = yaml.safe_load(WIDGET_CRD.read_text())
    crd["metadata"]["name"] = f"gadgets.{group}"
    crd["spec"]["group"] = group
    crd["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
    path = tmp_path / "gadget-crd.yaml"
    path.write_text(yaml.safe_dump(crd))
    await host.install_crds([path])

    body = {
        "apiVersion": f"{group}/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": namespace},
    }

    async def created() -> dict[str, Any] | None:
        # The miss above was seconds ago at most: the mapper refetches once its interval passed.
        try:
            return await client.create(body)
        except NoKindMatch:
            return None

    made = await eventually(created, timeout=15)
    assert made["metadata"]["uid"]
    assert (await client.get(gadget, "g", namespace=namespace))["kind"] == "Gadget"


# Watches.


async def test_lister_watcher_delivers_events_in_order(client: Client, namespace: str) -> None:
    collection: ListerWatcher = client.lister_watcher(CONFIGMAP, namespace=namespace)
    start = (await collection.list())["metadata"]["resourceVersion"]
    await client.create(configmap("watched", namespace, step="1"))
    await client.patch(CONFIGMAP, "watched", {"data": {"step": "2"}}, namespace=namespace)
    await client.delete(CONFIGMAP, "watched", namespace=namespace)

    seen: list[tuple[str, str]] = []
    with anyio.fail_after(20):
        async with collection.watch(resource_version=start, timeout_seconds=30) as events:
            async for event in events:
                if event["type"] == "BOOKMARK":
                    continue
                seen.append((event["type"], event["object"]["data"]["step"]))
                assert event["object"]["kind"] == "ConfigMap"
                if event["type"] == "DELETED":
                    break
    assert seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")]


async def test_lister_watcher_applies_its_selectors(client: Client, namespace: str) -> None:
    collection = client.lister_watcher(CONFIGMAP, namespace=namespace, label_selector="pick=me")
    start = (await collection.list())["metadata"]["resourceVersion"]
    skipped = configmap("skipped", namespace)
    await client.create(skipped)
    picked = configmap("picked", namespace)
    picked["metadata"]["labels"] = {"pick": "me"}
    await client.create(picked)
    with anyio.fail_after(20):
        async with collection.watch(resource_version=start, timeout_seconds=30) as events:
            event = await anext(aiter(events))
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "picked")
    listed = await collection.list(limit=10)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["picked"]


async def test_watch_carries_objects_larger_than_a_read_buffer(
    client: Client, namespace: str
) -> None:
    start = (await client.list(CONFIGMAP, namespace=namespace))["metadata"]["resourceVersion"]
    big = "x" * 900_000  # one watch line of ~900 kB: beyond aiohttp's line-reader limits
    await client.create(configmap("big", namespace, blob=big))
    await client.create(configmap("small", namespace, blob="y"))
    names: list[str] = []
    with anyio.fail_after(20):
        async with client.watch(
            CONFIGMAP, namespace=namespace, resource_version=start, timeout_seconds=30
        ) as events:
            async for event in events:
                if event["type"] == "ADDED":
                    names.append(event["object"]["metadata"]["name"])
                    if event["object"]["metadata"]["name"] == "big":
                        assert event["object"]["data"]["blob"] == big
                if len(names) == 2:
                    break
    assert names == ["big", "small"]


async def test_watch_ends_when_the_server_closes_and_closes_on_exit(
    client: Client, namespace: str
) -> None:
    start = (await client.list(CONFIGMAP, namespace=namespace))["metadata"]["resourceVersion"]
    with anyio.fail_after(20):
        async with client.watch(
            CONFIGMAP,
            namespace=namespace,
            resource_version=start,
            timeout_seconds=1,
            allow_watch_bookmarks=False,
        ) as events:
            assert isinstance(events, WatchEvents)
            assert not events.closed
            leftovers = [event async for event in events]
    assert leftovers == []
    assert events.closed


async def test_cancelling_a_watch_closes_its_stream(client: Client, namespace: str) -> None:
    opened: list[WatchEvents] = []
    is_open = anyio.Event()

    async def consume() -> None:
        async with client.watch(CONFIGMAP, namespace=namespace, timeout_seconds=60) as events:
            assert isinstance(events, WatchEvents)
            opened.append(events)
            is_open.set()
            async for _ in events:
                pass

    # Cancelled once open (a fixed deadline could fire before a loaded apiserver answered).
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            await is_open.wait()
            group.cancel_scope.cancel()
    assert opened[0].closed


async def test_watch_list_streams_initial_state_then_a_bookmark(
    client: Client, namespace: str
) -> None:
    for name in ("w1", "w2"):
        await client.create(configmap(name, namespace))
    added: list[str] = []
    with anyio.fail_after(20):
        async with client.watch(
            CONFIGMAP, namespace=namespace, timeout_seconds=30, send_initial_events=True
        ) as events:
            async for event in events:
                if event["type"] == "ADDED":
                    added.append(event["object"]["metadata"]["name"])
                elif event["type"] == "BOOKMARK":
                    annotations = event["object"]["metadata"].get("annotations", {})
                    if annotations.get("k8s.io/initial-events-end") == "true":
                        break
    assert sorted(added) == ["w1", "w2"]


# Configuration.


async def test_kubeconfig_errors_are_config_errors(host: ControlPlane, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        await ClusterConfig.from_kubeconfig(tmp_path / "missing")
    with pytest.raises(ConfigError):
        await ClusterConfig.from_kubeconfig(host.kubeconfig, context="no-such-context")
    insecure = yaml.safe_load(host.kubeconfig.read_text())
    insecure["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    with pytest.raises(ConfigError, match="TLS"):
        await ClusterConfig.from_kubeconfig_dict(insecure)


async def test_configs_are_per_cluster(host: ControlPlane) -> None:
    first = await ClusterConfig.from_kubeconfig(host.kubeconfig)
    second = await ClusterConfig.from_kubeconfig(host.kubeconfig)
    assert first.credentials is not second.credentials
    assert first.host == host.url
    assert host.url in repr(first)


async def test_credentials_never_reach_a_repr_an_error_or_a_log(
    host: ControlPlane, client: Client, namespace: str, tmp_path: Path
) -> None:
    token = await service_account_token(client, namespace, "quiet")
    forged = token.rsplit(".", 1)[0] + "." + secrets.token_urlsafe(32)
    admin_user = yaml.safe_load(host.kubeconfig.read_text())["users"][0]["user"]
    key_data = admin_user["client-key-data"]
    key_lines = [
        line
        for line in base64.b64decode(key_data).decode().splitlines()
        if line and not line.startswith("-----")
    ]
    # The secret parts: a JWT's signature (its header and payload name the account, not a key),
    # the forged one, the admin's private key as PEM lines and as the kubeconfig's base64.
    hidden = [token.rsplit(".", 1)[1], forged.rsplit(".", 1)[1], key_data, *key_lines]
    seen: list[str] = []
    with structlog.testing.capture_logs() as logs:
        for user, gvk, expected in (
            ({"token": token}, SECRET, Forbidden),
            ({"token": forged}, CONFIGMAP, Unauthorized),
            (admin_user, CONFIGMAP, NotFound),
        ):
            config = await ClusterConfig.from_kubeconfig(_kubeconfig_as(host, tmp_path, user))
            async with Client(config) as live:
                seen += [repr(config), str(config), repr(config.credentials), repr(live)]
                with pytest.raises(expected) as failed:
                    await live.get(gvk, "missing", namespace=namespace)
                seen += _described(failed.value)
        # A reflector refused its list logs the error: the Forbidden must be logged, its
        # credentials not.
        async with await _client_for(
            _kubeconfig_as(host, tmp_path, {"token": token}), tmp_path
        ) as as_quiet:
            informer = SharedInformer(
                as_quiet.lister_watcher(SECRET, namespace=namespace), name="s"
            )
            async with anyio.create_task_group() as group:
                group.start_soon(informer.run)
                await eventually(lambda: _logged(logs, "403"), timeout=20)
                group.cancel_scope.cancel()
    seen += [repr(entry) for entry in logs]
    for text in seen:
        for secret in hidden:
            assert secret not in text, f"a credential leaked into: {text[:200]}"
    assert any("Forbidden" in text for text in seen)


def _kubeconfig_as(host: ControlPlane, directory: Path, user: dict[str, Any]) -> Path:
    document = yaml.safe_load(host.kubeconfig.read_text())
    document["users"][0]["user"] = user
    path = directory / f"kubeconfig-{secrets.token_hex(3)}"
    path.write_text(yaml.safe_dump(document))
    return path


def _described(error: BaseException) -> list[str]:
    """Every way an error is shown: its text, repr, traceback, and its chained HTTP error's
    request (whose repr holds the request headers)."""
    texts = [str(error), repr(error), "".join(traceback.format_exception(error))]
    cause = error.__cause__
    if isinstance(cause, ClientResponseError):
        texts += [repr(cause), repr(cause.request_info)]
    return texts


async def _logged(logs: Sequence[Mapping[str, Any]], words: str) -> bool:
    return any(words in repr(entry) for entry in logs)


# 429 handling, end to end against a small fake apiserver.


@dataclass
class FakeApiserver:
    """A tiny HTTP apiserver: core discovery, and ConfigMap GETs answered 429 ``refusals`` times."""

    url: str = ""
    refusals: int = 0
    authorizations: list[str] = field(default_factory=list)

    async def discovery(self, request: web.Request) -> web.Response:
        resources = [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "verbs": []}]
        return web.json_response({"kind": "APIResourceList", "resources": resources})

    async def configmap(self, request: web.Request) -> web.Response:
        self.authorizations.append(request.headers.get("Authorization", ""))
        if self.refusals > 0:
            self.refusals -= 1
            status = {"kind": "Status", "code": 429, "reason": "TooManyRequests", "message": "slow"}
            return web.json_response(status, status=429, headers={"Retry-After": "3"})
        name = request.match_info["name"]
        return web.json_response(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
        )


@pytest_asyncio.fixture(loop_scope="session")
async def fake_apiserver() -> AsyncIterator[FakeApiserver]:
    fake = FakeApiserver()
    app = web.Application()
    app.router.add_get("/api/v1", fake.discovery)
    app.router.add_get("/api/v1/namespaces/{ns}/configmaps/{name}", fake.configmap)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    fake.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield fake
    finally:
        await runner.cleanup()


def _token_config(url: str) -> ClusterConfig:
    credentials = Credentials(token="sekret-token")
    return ClusterConfig(url, credentials=credentials, source="fake apiserver")


async def test_429_is_retried_after_the_servers_delay(fake_apiserver: FakeApiserver) -> None:
    fake_apiserver.refusals = 2
    clock = FakeClock(sleeps_advance=True)
    config = _token_config(fake_apiserver.url)
    async with Client(config, limiter=Unlimited(), retry=RetryAfter(clock=clock)) as patient:
        got = await patient.get(CONFIGMAP, "cm", namespace="ns")
    assert got["metadata"]["name"] == "cm"
    assert clock.sleeps == [3.0, 3.0]
    assert fake_apiserver.authorizations == ["Bearer sekret-token"] * 3


async def test_429_retries_run_out(fake_apiserver: FakeApiserver) -> None:
    fake_apiserver.refusals = 5
    retry = RetryAfter(max_retries=2, clock=FakeClock(sleeps_advance=True))
    async with Client(
        _token_config(fake_apiserver.url), limiter=Unlimited(), retry=retry
    ) as impatient:
        with pytest.raises(TooManyRequests) as throttled:
            await impatient.get(CONFIGMAP, "cm", namespace="ns")
    assert throttled.value.retry_after == 3.0
    assert fake_apiserver.refusals == 2  # one try and two retries
    # The chained HTTP error names the request but never carries its credentials.
    cause = throttled.value.__cause__
    assert isinstance(cause, ClientResponseError)
    assert cause.request_info.url.path == "/api/v1/namespaces/ns/configmaps/cm"
    assert "sekret" not in repr(cause.request_info)


async def test_requests_are_paced_by_the_token_bucket(fake_apiserver: FakeApiserver) -> None:
    clock = FakeClock(sleeps_advance=True)
    bucket = TokenBucket(qps=5, burst=2, clock=clock)
    async with Client(_token_config(fake_apiserver.url), limiter=bucket) as paced:
        for _ in range(3):
            await paced.get(CONFIGMAP, "cm", namespace="ns")
    # Four requests (discovery, three GETs): the burst of two goes at once, then 1/5 s apart.
    assert clock.sleeps == pytest.approx([0.2, 0.2])
