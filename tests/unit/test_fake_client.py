"""FakeClient: the apiserver's rules in memory, and real informers and caches on its watches."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from reconcile.cache.cache import Cache, ListerWatcherSource
from reconcile.cache.informer import SharedInformer
from reconcile.cache.reflector import Backoff
from reconcile.client.client import Client, ListerWatcher, PatchType, Preconditions, Reader
from reconcile.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Gone,
    Invalid,
    NoKindMatch,
    NotFound,
    ServerTimeout,
)
from reconcile.gvk import GVK
from reconcile.objects import Obj
from testenv import eventually
from testenv.fake import BUILTIN_KINDS, FakeClient, FakeKind

pytestmark = pytest.mark.asyncio(loop_scope="session")

WIDGET_CRD = Path(__file__).parents[1] / "integration" / "testdata" / "widget-crd.yaml"
FAST = Backoff(initial=0.001, maximum=0.01, jitter=0.0)

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
NAMESPACE = GVK("", "v1", "Namespace")
POD = GVK("", "v1", "Pod")
DEPLOYMENT = GVK("apps", "v1", "Deployment")
CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
WIDGET = GVK("client.test", "v1", "Widget")
GADGET = GVK("fake.test", "v1", "Gadget")
PLAIN = GVK("fake.test", "v1", "Plain")

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def configmap(
    name: str, namespace: str = "default", labels: dict[str, str] | None = None, **data: str
) -> Obj:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def deployment(name: str, namespace: str = "default", replicas: int = 1) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "web", "image": "nginx:1.27", "env": [{"name": "A", "value": "1"}]}
                    ]
                },
            },
        },
        "status": {"replicas": 7},
    }


def custom(gvk: GVK, name: str, namespace: str = "default", **spec: Any) -> Obj:
    return {
        "apiVersion": gvk.api_version,
        "kind": gvk.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def crd(gvk: GVK, plural: str, subresources: dict[str, Any]) -> Obj:
    version = {"name": gvk.version, "served": True, "storage": True, "subresources": subresources}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{gvk.group}"},
        "spec": {
            "group": gvk.group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": gvk.kind},
            "versions": [version],
        },
    }


# A Gadget's scale lives at custom paths; a Plain has no subresources at all.
GADGET_CRD = crd(
    GADGET,
    "gadgets",
    {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.size",
            "statusReplicasPath": ".status.ready",
            "labelSelectorPath": ".status.pick",
        },
    },
)
PLAIN_CRD = crd(PLAIN, "plains", {})


def fake() -> FakeClient:
    return FakeClient(crds=[WIDGET_CRD, GADGET_CRD, PLAIN_CRD])


def rv(obj: Obj) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def events(stream: AsyncIterator[Obj], count: int) -> list[tuple[str, str]]:
    """The next ``count`` events as (type, name); fails if they do not come within 5 s."""
    seen: list[tuple[str, str]] = []
    with anyio.fail_after(5):
        while len(seen) < count:
            event = await anext(stream)
            seen.append((event["type"], event["object"]["metadata"].get("name", "")))
    return seen


# The kind registry.


@pytest.mark.parametrize(
    ("gvk", "plural", "namespaced", "subresources"),
    [
        (CONFIGMAP, "configmaps", True, set()),
        (NAMESPACE, "namespaces", False, {"status"}),
        (POD, "pods", True, {"status"}),
        (GVK("", "v1", "Node"), "nodes", False, {"status"}),
        (DEPLOYMENT, "deployments", True, {"status", "scale"}),
        (GVK("apps", "v1", "StatefulSet"), "statefulsets", True, {"status", "scale"}),
        (GVK("apps", "v1", "DaemonSet"), "daemonsets", True, {"status"}),
        (GVK("coordination.k8s.io", "v1", "Lease"), "leases", True, set()),
        (CLUSTER_ROLE, "clusterroles", False, set()),
        (GVK("batch", "v1", "Job"), "jobs", True, {"status"}),
    ],
    ids=lambda value: value.kind if isinstance(value, GVK) else None,
)
async def test_builtin_kinds_know_their_scope_and_subresources(
    gvk: GVK, plural: str, namespaced: bool, subresources: set[str]
) -> None:
    resource = await FakeClient().resource_for(gvk)
    assert (resource.plural, resource.namespaced) == (plural, namespaced)
    assert resource.subresources == frozenset(subresources)


async def test_the_required_builtin_kinds_are_all_served() -> None:
    kinds = {kind.gvk.kind for kind in BUILTIN_KINDS}
    assert {
        "ConfigMap",
        "Secret",
        "Namespace",
        "Pod",
        "Service",
        "ServiceAccount",
        "Event",
        "Node",
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "Lease",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "Job",
    } <= kinds


async def test_an_unknown_kind_is_no_kind_match_like_the_real_client() -> None:
    client = FakeClient()
    nothing = GVK("nowhere.test", "v1", "Thing")
    with pytest.raises(NoKindMatch):
        await client.get(nothing, "x", namespace="default")
    with pytest.raises(NoKindMatch):
        await client.list(nothing)
    with pytest.raises(NoKindMatch):
        await client.create(custom(nothing, "x"))
    with pytest.raises(NoKindMatch):
        async with client.watch(nothing):
            pytest.fail("the watch should have been refused")
    # A lister-watcher maps its kind lazily, as the real one: building it never fails.
    collection = client.lister_watcher(nothing)
    with pytest.raises(NoKindMatch):
        await collection.list()


async def test_crds_from_files_bring_their_subresources_and_names() -> None:
    client = FakeClient()
    with pytest.raises(NoKindMatch):
        await client.get(WIDGET, "w", namespace="default")
    [installed] = client.install_crds([WIDGET_CRD])
    assert (installed.gvk, installed.plural, installed.namespaced) == (WIDGET, "widgets", True)
    assert installed.subresources == {"status", "scale"}
    assert await client.resource_for(WIDGET) == installed
    # The REST mapper answers from discovery documents the fake serves from its registry.
    assert (await client.mapper.resource_for_name("wdg")).gvk == WIDGET
    assert (await client.mapper.resource_for_name("deploy")).gvk == DEPLOYMENT
    assert (await client.mapper.resource_for(DEPLOYMENT)).subresources == {"status", "scale"}


async def test_crd_dicts_are_installed_and_other_manifests_refused() -> None:
    client = FakeClient()
    client.install_crds([GADGET_CRD, PLAIN_CRD])
    assert (await client.resource_for(GADGET)).subresources == {"status", "scale"}
    assert (await client.resource_for(PLAIN)).subresources == set()
    with pytest.raises(ValueError, match="CustomResourceDefinition"):
        client.install_crds([configmap("not-a-crd")])


async def test_every_version_of_a_crd_serves_the_same_objects() -> None:
    two_versions = crd(GADGET, "gadgets", {"status": {}})
    v2 = {**two_versions["spec"]["versions"][0], "name": "v2", "storage": False}
    two_versions["spec"]["versions"].append(v2)
    client = FakeClient(crds=[two_versions])
    await client.create(custom(GADGET, "g", size=1))
    newer = GVK("fake.test", "v2", "Gadget")
    got = await client.get(newer, "g", namespace="default")
    assert (got["apiVersion"], got["spec"]) == ("fake.test/v2", {"size": 1})
    assert [i["apiVersion"] for i in (await client.list(newer))["items"]] == ["fake.test/v2"]


# Creating: identity, server fields, refusals.


async def test_create_sets_uid_creation_timestamp_and_resource_version() -> None:
    client = fake()
    before = await client.list(CONFIGMAP)
    created = await client.create(configmap("one", colour="red"))
    meta = created["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert TIMESTAMP.fullmatch(meta["creationTimestamp"])
    assert rv(created) == rv(before) + 1
    assert created["data"] == {"colour": "red"}
    assert await client.get(CONFIGMAP, "one", namespace="default") == created


async def test_generation_starts_at_one_for_kinds_that_keep_it() -> None:
    client = fake()
    assert "generation" not in (await client.create(configmap("cm")))["metadata"]
    assert (await client.create(deployment("web")))["metadata"]["generation"] == 1
    assert (await client.create(custom(WIDGET, "w")))["metadata"]["generation"] == 1


async def test_generate_name_picks_a_free_name() -> None:
    client = fake()
    template = configmap("")
    template["metadata"] = {"generateName": "gen-", "namespace": "default"}
    first = await client.create(template)
    second = await client.create(template)
    assert re.fullmatch(r"gen-[a-z0-9]{5}", first["metadata"]["name"])
    assert first["metadata"]["name"] != second["metadata"]["name"]


async def test_create_refusals_match_the_apiserver() -> None:
    client = fake()
    created = await client.create(configmap("taken"))
    with pytest.raises(AlreadyExists) as taken:
        await client.create(configmap("taken"))
    assert (taken.value.code, taken.value.message) == (409, 'configmaps "taken" already exists')
    with pytest.raises(BadRequest, match="resourceVersion should not be set"):
        await client.create({**created, "metadata": {**created["metadata"], "name": "copy"}})
    with pytest.raises(Invalid) as invalid:
        await client.create(configmap("Not_A_Valid_Name"))
    assert invalid.value.details["causes"][0]["field"] == "metadata.name"
    with pytest.raises(Invalid, match="name or generateName is required"):
        await client.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "a"}}
        )
    with pytest.raises(ValueError, match="namespaced"):
        await client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    # RBAC names are path segments: colons are fine there.
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}
    made = await client.create({**role, "metadata": {"name": "system:controller:x"}})
    assert made["metadata"]["name"] == "system:controller:x"


async def test_cluster_scoped_objects_need_and_keep_no_namespace() -> None:
    client = fake()
    created = await client.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "namespace": "x"}}
    )
    assert "namespace" not in created["metadata"]
    assert (await client.get(NAMESPACE, "team"))["metadata"]["uid"] == created["metadata"]["uid"]


async def test_a_missing_object_is_not_found_in_the_apiservers_words() -> None:
    client = fake()
    with pytest.raises(NotFound) as missing:
        await client.get(DEPLOYMENT, "absent", namespace="default")
    assert missing.value.message == 'deployments.apps "absent" not found'
    assert missing.value.details == {"name": "absent", "group": "apps", "kind": "deployments"}
    with pytest.raises(ValueError, match="namespaced"):
        await client.get(CONFIGMAP, "anything")


async def test_dry_run_writes_nothing() -> None:
    client = fake()
    dry = await client.create(configmap("dry"), dry_run=True)
    assert dry["metadata"]["name"] == "dry"
    with pytest.raises(NotFound):
        await client.get(CONFIGMAP, "dry", namespace="default")
    kept = await client.create(configmap("kept", v="1"))
    await client.patch(kept, {"data": {"v": "2"}}, dry_run=True)
    await client.delete(kept, dry_run=True)
    assert (await client.get(CONFIGMAP, "kept", namespace="default")) == kept


# resourceVersion: one counter, optimistic concurrency.


async def test_one_resource_version_counter_covers_every_kind() -> None:
    client = fake()
    first = await client.create(configmap("a"))
    second = await client.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}}
    )
    updated = await client.update({**first, "data": {"k": "v"}})
    assert [rv(second), rv(updated)] == [rv(first) + 1, rv(first) + 2]
    listing = await client.list(SECRET)
    assert rv(listing) == rv(updated)


async def test_a_stale_update_is_a_conflict_and_changes_nothing() -> None:
    client = fake()
    first = await client.create(configmap("contended", v="1"))
    await client.update({**first, "data": {"v": "2"}})
    with pytest.raises(Conflict) as stale:
        await client.update({**first, "data": {"v": "3"}})
    assert stale.value.reason == "Conflict"
    assert stale.value.message == (
        'Operation cannot be fulfilled on configmaps "contended": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert (await client.get(CONFIGMAP, "contended", namespace="default"))["data"] == {"v": "2"}


async def test_updates_without_a_resource_version() -> None:
    client = fake()
    await client.create(configmap("loose", v="1"))
    # Built-in kinds allow unconditional updates...
    assert (await client.update(configmap("loose", v="2")))["data"] == {"v": "2"}
    # ...custom resources do not.
    await client.create(custom(WIDGET, "w", colour="red"))
    with pytest.raises(Invalid, match="must be specified for an update"):
        await client.update(custom(WIDGET, "w", colour="blue"))


async def test_an_update_with_another_uid_is_a_conflict() -> None:
    client = fake()
    created = await client.create(configmap("a"))
    with pytest.raises(Conflict, match="UID in precondition"):
        await client.update({**created, "metadata": {**created["metadata"], "uid": "other"}})
    with pytest.raises(NotFound):
        await client.update(configmap("never-created"))


async def test_a_write_that_changes_nothing_keeps_the_version_and_sends_no_event() -> None:
    client = fake()
    created = await client.create(configmap("same", v="1"))
    async with client.watch(
        CONFIGMAP, resource_version=created["metadata"]["resourceVersion"]
    ) as w:
        again = await client.update(created)
        assert rv(again) == rv(created)
        patched = await client.patch(created, {"data": {"v": "1"}})
        assert rv(patched) == rv(created)
        changed = await client.patch(created, {"data": {"v": "2"}})
        # The first event is the real change: the no-op writes sent none.
        assert await events(w, 1) == [("MODIFIED", "same")]
    assert rv(changed) == rv(created) + 1


# Generation.


async def test_generation_follows_spec_changes_only() -> None:
    client = fake()
    created = await client.create(deployment("web"))
    labelled = await client.patch(created, {"metadata": {"labels": {"team": "a"}}})
    assert labelled["metadata"]["generation"] == 1
    status = await client.patch_status(labelled, {"status": {"replicas": 1}})
    assert status["metadata"]["generation"] == 1
    scaled = await client.patch(status, {"spec": {"replicas": 3}})
    assert scaled["metadata"]["generation"] == 2
    replaced = await client.update({**scaled, "spec": {**scaled["spec"], "paused": True}})
    assert replaced["metadata"]["generation"] == 3
    # A generation sent by the caller is the server's business: ignored.
    forged = await client.update(
        {**replaced, "metadata": {**replaced["metadata"], "generation": 9}}
    )
    assert forged["metadata"]["generation"] == 3


async def test_without_a_status_subresource_status_is_spec_for_generation() -> None:
    client = fake()
    created = await client.create({**custom(PLAIN, "p", size=1), "status": {"phase": "New"}})
    assert created["status"] == {"phase": "New"}
    changed = await client.patch(created, {"status": {"phase": "Old"}})
    assert changed["status"] == {"phase": "Old"}
    assert changed["metadata"]["generation"] == 2


# The status subresource.


async def test_status_subresource_keeps_status_and_spec_apart() -> None:
    client = fake()
    created = await client.create(deployment("web"))
    assert "status" not in created  # status comes only through the subresource

    with_status = await client.update_status({**created, "status": {"replicas": 2}})
    assert with_status["status"] == {"replicas": 2}

    # Writes of the object keep the stored status, whatever they carry.
    spec_write = {**with_status, "status": {"replicas": 99}}
    spec_write["spec"] = {**with_status["spec"], "replicas": 4}
    updated = await client.update(spec_write)
    assert (updated["spec"]["replicas"], updated["status"]) == (4, {"replicas": 2})
    patched = await client.patch(updated, {"spec": {"replicas": 5}, "status": None})
    assert patched["status"] == {"replicas": 2}

    # Status writes change only status.
    status_write = {**patched, "status": {"replicas": 5}, "spec": {"replicas": 0}}
    status_write["metadata"] = {**patched["metadata"], "labels": {"ignored": "yes"}}
    only_status = await client.update_status(status_write)
    assert only_status["spec"]["replicas"] == 5
    assert "labels" not in only_status["metadata"]
    assert only_status["status"] == {"replicas": 5}
    by_name = await client.patch_status(
        DEPLOYMENT, "web", {"status": {"readyReplicas": 5}}, namespace="default"
    )
    assert by_name["status"] == {"replicas": 5, "readyReplicas": 5}
    assert (await client.get_status(DEPLOYMENT, "web", namespace="default")) == by_name


async def test_status_writes_check_the_resource_version() -> None:
    client = fake()
    created = await client.create(deployment("web"))
    await client.patch(created, {"spec": {"replicas": 2}})
    with pytest.raises(Conflict):
        await client.update_status({**created, "status": {"replicas": 1}})


async def test_custom_resources_take_the_status_subresource_from_the_crd() -> None:
    client = fake()
    created = await client.create({**custom(WIDGET, "w", colour="red"), "status": {"x": 1}})
    assert "status" not in created
    updated = await client.update_status(
        {**created, "spec": {"colour": "blue"}, "status": {"phase": "Ready"}}
    )
    assert (updated["spec"], updated["status"]) == ({"colour": "red"}, {"phase": "Ready"})
    assert updated["metadata"]["generation"] == 1


async def test_kinds_without_the_status_subresource_answer_404_for_it() -> None:
    client = fake()
    created = await client.create(configmap("cm"))
    for attempt in (
        client.update_status(created),
        client.get_status(CONFIGMAP, "cm", namespace="default"),
        client.patch_status(created, {"status": {"a": 1}}),
    ):
        with pytest.raises(NotFound) as missing:
            await attempt
        assert missing.value.message == "the server could not find the requested resource"


# Finalizers and deletion.


async def test_finalizers_hold_a_deleted_object_until_the_last_is_removed() -> None:
    client = fake()
    held = deployment("held")
    held["metadata"]["finalizers"] = ["fake.test/a", "fake.test/b"]
    created = await client.create(held)
    async with client.watch(
        DEPLOYMENT, resource_version=created["metadata"]["resourceVersion"]
    ) as w:
        answer = await client.delete(DEPLOYMENT, "held", namespace="default")
        meta = answer["metadata"]
        assert TIMESTAMP.fullmatch(meta["deletionTimestamp"])
        assert meta["deletionGracePeriodSeconds"] == 0
        assert meta["generation"] == 2  # marking for deletion bumps it, as the apiserver does
        again = await client.delete(created)
        assert again == answer  # already marked: nothing changes
        one_left = await client.patch(answer, {"metadata": {"finalizers": ["fake.test/b"]}})
        assert one_left["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]
        final = await client.update(
            {**one_left, "metadata": {**one_left["metadata"], "finalizers": []}}
        )
        assert "finalizers" not in final["metadata"]
        assert await events(w, 3) == [
            ("MODIFIED", "held"),
            ("MODIFIED", "held"),
            ("DELETED", "held"),
        ]
    with pytest.raises(NotFound):
        await client.get(DEPLOYMENT, "held", namespace="default")


async def test_no_finalizer_may_be_added_to_an_object_being_deleted() -> None:
    client = fake()
    held = configmap("held")
    held["metadata"]["finalizers"] = ["fake.test/a"]
    await client.create(held)
    marked = await client.delete(CONFIGMAP, "held", namespace="default")
    with pytest.raises(Invalid, match="no new finalizers can be added"):
        await client.patch(marked, {"metadata": {"finalizers": ["fake.test/a", "fake.test/b"]}})


async def test_delete_without_finalizers_answers_a_status_and_removes_at_once() -> None:
    client = fake()
    created = await client.create(custom(WIDGET, "w"))
    answer = await client.delete(created)
    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": "w",
            "group": "client.test",
            "kind": "widgets",
            "uid": created["metadata"]["uid"],
        },
    }
    with pytest.raises(NotFound):
        await client.delete(created)


async def test_delete_preconditions() -> None:
    client = fake()
    created = await client.create(configmap("guarded"))
    with pytest.raises(Conflict, match=r"UID in the precondition \(not-the-uid\)"):
        await client.delete(created, preconditions=Preconditions(uid="not-the-uid"))
    current = await client.patch(created, {"data": {"changed": "yes"}})
    with pytest.raises(Conflict, match="ResourceVersion in the precondition"):
        await client.delete(created, preconditions=Preconditions.of(created))
    await client.delete(current, preconditions=Preconditions.of(current))
    with pytest.raises(NotFound):
        await client.get(CONFIGMAP, "guarded", namespace="default")


async def test_delete_all_of_with_a_label_selector() -> None:
    client = fake()
    for name, app in [("a1", "a"), ("a2", "a"), ("b1", "b")]:
        await client.create(configmap(name, labels={"app": app}))
    await client.create(configmap("a-elsewhere", "other", labels={"app": "a"}))
    held = configmap("a-held", labels={"app": "a"})
    held["metadata"]["finalizers"] = ["fake.test/hold"]
    await client.create(held)

    answer = await client.delete_all_of(CONFIGMAP, namespace="default", label_selector={"app": "a"})
    assert answer["kind"] == "ConfigMapList"
    assert [item["metadata"]["name"] for item in answer["items"]] == ["a-held", "a1", "a2"]
    remaining = await client.list(CONFIGMAP)
    names = {item["metadata"]["name"] for item in remaining["items"]}
    assert names == {"a-held", "a-elsewhere", "b1"}
    marked = await client.get(CONFIGMAP, "a-held", namespace="default")
    assert marked["metadata"]["deletionTimestamp"]
    with pytest.raises(ValueError, match="namespaced"):
        await client.delete_all_of(CONFIGMAP, label_selector="app=b")


# Patches.


async def test_merge_patch_by_object_and_by_name() -> None:
    client = fake()
    created = await client.create(configmap("merge", keep="1", drop="2"))
    patched = await client.patch(created, {"data": {"drop": None, "new": "3"}})
    assert patched["data"] == {"keep": "1", "new": "3"}
    again = await client.patch(CONFIGMAP, "merge", {"data": {"keep": "9"}}, namespace="default")
    assert again["data"] == {"keep": "9", "new": "3"}
    with pytest.raises(NotFound):
        await client.patch(CONFIGMAP, "absent", {"data": {}}, namespace="default")


async def test_a_patch_carrying_a_stale_resource_version_is_a_conflict() -> None:
    client = fake()
    created = await client.create(configmap("a", v="1"))
    await client.patch(created, {"data": {"v": "2"}})
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}}
    with pytest.raises(Conflict):
        await client.patch(created, {**stale, "data": {"v": "3"}})


async def test_json_patch_operations() -> None:
    client = fake()
    obj = configmap("ops", a="1", b="2")
    obj["metadata"]["labels"] = {"x/y": "z"}
    obj["list"] = ["one", "three"]
    await client.create(obj)
    operations = [
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "add", "path": "/data/c", "value": "3"},
        {"op": "remove", "path": "/data/b"},
        {"op": "add", "path": "/list/1", "value": "two"},
        {"op": "add", "path": "/list/-", "value": "four"},
        {"op": "copy", "from": "/data/c", "path": "/data/d"},
        {"op": "move", "from": "/metadata/labels/x~1y", "path": "/metadata/labels/moved"},
    ]
    patched = await client.patch(
        CONFIGMAP, "ops", operations, namespace="default", patch_type=PatchType.JSON
    )
    assert patched["data"] == {"a": "10", "c": "3", "d": "3"}
    assert patched["list"] == ["one", "two", "three", "four"]
    assert patched["metadata"]["labels"] == {"moved": "z"}


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "test", "path": "/data/a", "value": "not-1"},
        {"op": "remove", "path": "/data/absent"},
        {"op": "replace", "path": "/data/absent", "value": "x"},
        {"op": "add", "path": "/nowhere/deep", "value": "x"},
        {"op": "add", "path": "/list/5", "value": "x"},
        {"op": "explode", "path": "/data"},
    ],
    ids=["failed-test", "remove-missing", "replace-missing", "add-no-parent", "index", "op"],
)
async def test_a_failing_json_patch_is_invalid_and_changes_nothing(
    operation: dict[str, Any],
) -> None:
    client = fake()
    obj = configmap("ops", a="1")
    obj["list"] = ["one"]
    created = await client.create(obj)
    # A first operation that would succeed must be rolled back with the failing one.
    operations = [{"op": "replace", "path": "/data/a", "value": "2"}, operation]
    with pytest.raises(Invalid):
        await client.patch(created, operations, patch_type=PatchType.JSON)
    assert await client.get(CONFIGMAP, "ops", namespace="default") == created


async def test_strategic_merge_merges_named_lists_by_name() -> None:
    client = fake()
    created = await client.create(deployment("web"))
    sidecar = {"name": "sidecar", "image": "busybox:1.36"}
    web = {"name": "web", "env": [{"name": "B", "value": "2"}]}
    patch = {"spec": {"template": {"spec": {"containers": [sidecar, web]}}}}
    strategic = await client.patch(created, patch, patch_type=PatchType.STRATEGIC)
    containers = strategic["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["sidecar", "web"]
    assert containers[1]["image"] == "nginx:1.27"  # merged into, not replaced
    assert containers[1]["env"] == [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]

    drop = {
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}
    }
    dropped = await client.patch(strategic, drop, patch_type=PatchType.STRATEGIC)
    assert [c["name"] for c in dropped["spec"]["template"]["spec"]["containers"]] == ["web"]

    # A JSON merge patch of the same body replaces the list instead.
    merged = await client.patch(dropped, patch, patch_type=PatchType.MERGE)
    assert [c["name"] for c in merged["spec"]["template"]["spec"]["containers"]] == [
        "sidecar",
        "web",
    ]
    assert "image" not in merged["spec"]["template"]["spec"]["containers"][1]


async def test_strategic_merge_is_refused_for_custom_resources() -> None:
    client = fake()
    created = await client.create(custom(WIDGET, "w", colour="red"))
    with pytest.raises(ApiError) as refused:
        await client.patch(created, {"spec": {"colour": "blue"}}, patch_type=PatchType.STRATEGIC)
    assert (refused.value.code, refused.value.reason) == (415, "UnsupportedMediaType")


async def test_apply_creates_merges_and_is_idempotent() -> None:
    client = fake()
    created = await client.apply(configmap("applied", owner="alpha"), field_manager="alpha")
    assert created["data"] == {"owner": "alpha"}
    assert created["metadata"]["uid"]
    again = await client.apply(configmap("applied", owner="alpha"), field_manager="alpha")
    assert rv(again) == rv(created)
    # Fields the body leaves out stay; ownership conflicts are not modelled.
    merged = await client.apply(configmap("applied", extra="1"), field_manager="beta", force=True)
    assert merged["data"] == {"owner": "alpha", "extra": "1"}
    stale = configmap("applied", owner="gamma")
    stale["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    with pytest.raises(Conflict):
        await client.apply(stale)


async def test_force_is_only_for_apply() -> None:
    client = fake()
    created = await client.create(configmap("no-force"))
    with pytest.raises(ValueError, match="force"):
        await client.patch(created, {"data": {"a": "b"}}, force=True)


# The scale subresource.


async def test_deployment_scale_subresource() -> None:
    client = fake()
    await client.create(deployment("scaled", replicas=1))
    scale = await client.get_scale(DEPLOYMENT, "scaled", namespace="default")
    assert (scale["apiVersion"], scale["kind"]) == ("autoscaling/v1", "Scale")
    assert scale["spec"] == {"replicas": 1}
    assert scale["status"] == {"replicas": 0, "selector": "app=scaled"}

    patched = await client.patch_scale(
        DEPLOYMENT, "scaled", {"spec": {"replicas": 3}}, namespace="default"
    )
    assert patched["spec"]["replicas"] == 3
    scale = await client.get_scale(DEPLOYMENT, "scaled", namespace="default")
    updated = await client.update_scale(DEPLOYMENT, {**scale, "spec": {"replicas": 5}})
    assert updated["spec"]["replicas"] == 5
    got = await client.get(DEPLOYMENT, "scaled", namespace="default")
    assert (got["spec"]["replicas"], got["metadata"]["generation"]) == (5, 3)
    assert got["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]
    with pytest.raises(Conflict):
        await client.update_scale(DEPLOYMENT, scale)


async def test_custom_resource_scale_follows_the_crds_paths() -> None:
    client = fake()
    await client.create(custom(GADGET, "g", size=2))
    await client.patch_status(
        GADGET, "g", {"status": {"ready": 1, "pick": "app=g"}}, namespace="default"
    )
    scale = await client.get_scale(GADGET, "g", namespace="default")
    assert (scale["spec"], scale["status"]) == (
        {"replicas": 2},
        {"replicas": 1, "selector": "app=g"},
    )
    await client.patch_scale(GADGET, "g", {"spec": {"replicas": 4}}, namespace="default")
    assert (await client.get(GADGET, "g", namespace="default"))["spec"] == {"size": 4}


async def test_scale_of_a_kind_without_it_is_not_found() -> None:
    client = fake()
    await client.create(configmap("cm"))
    with pytest.raises(NotFound):
        await client.get_scale(CONFIGMAP, "cm", namespace="default")
    with pytest.raises(NotFound):
        await client.patch_scale(CONFIGMAP, "cm", {"spec": {"replicas": 1}}, namespace="default")


# Lists.


async def test_list_filters_by_namespace_labels_and_fields() -> None:
    client = fake()
    await client.create(configmap("front", labels={"tier": "web"}))
    await client.create(configmap("back", labels={"tier": "db"}))
    await client.create(configmap("bare"))
    await client.create(configmap("front", "other", labels={"tier": "web"}))

    async def names(**options: Any) -> list[str]:
        listing = await client.list(CONFIGMAP, **options)
        return [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in listing["items"]]

    assert await names(namespace="default") == ["default/back", "default/bare", "default/front"]
    assert await names(label_selector="tier=web") == ["default/front", "other/front"]
    assert await names(label_selector={"tier": "web"}, namespace="other") == ["other/front"]
    assert await names(namespace="default", label_selector="tier,tier!=web") == ["default/back"]
    assert await names(label_selector="tier in (db, cache)") == ["default/back"]
    assert await names(field_selector={"metadata.name": "front"}) == [
        "default/front",
        "other/front",
    ]
    assert await names(field_selector="metadata.namespace!=default") == ["other/front"]
    with pytest.raises(BadRequest, match=r"field label not supported: data\.colour"):
        await client.list(CONFIGMAP, field_selector="data.colour=red")
    with pytest.raises(BadRequest):
        await client.list(CONFIGMAP, label_selector="tier in (")


async def test_kinds_serve_their_own_field_labels() -> None:
    client = fake()
    for name, node in [("p1", "n1"), ("p2", "n2")]:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "d"}}
        await client.create({**pod, "spec": {"nodeName": node}})
    listing = await client.list(POD, field_selector="spec.nodeName=n2")
    assert [i["metadata"]["name"] for i in listing["items"]] == ["p2"]


async def test_list_items_name_themselves_and_carry_the_current_version() -> None:
    client = fake()
    await client.create(configmap("one"))
    last = await client.create(deployment("web"))
    listing = await client.list(CONFIGMAP)
    assert (listing["apiVersion"], listing["kind"]) == ("v1", "ConfigMapList")
    assert listing["metadata"] == {"resourceVersion": last["metadata"]["resourceVersion"]}
    [item] = listing["items"]
    assert (item["apiVersion"], item["kind"]) == ("v1", "ConfigMap")


async def test_pages_are_one_consistent_snapshot() -> None:
    client = fake()
    for index in range(5):
        await client.create(configmap(f"page-{index}"))
    first = await client.list(CONFIGMAP, limit=2)
    assert [i["metadata"]["name"] for i in first["items"]] == ["page-0", "page-1"]
    assert first["metadata"]["remainingItemCount"] == 3
    # Changes between pages do not show in the pages of that list.
    await client.delete(CONFIGMAP, "page-3", namespace="default")
    await client.create(configmap("page-9"))
    token = first["metadata"]["continue"]
    second = await client.list(CONFIGMAP, limit=2, continue_=token)
    third = await client.list(CONFIGMAP, limit=2, continue_=second["metadata"]["continue"])
    assert [i["metadata"]["name"] for i in second["items"] + third["items"]] == [
        "page-2",
        "page-3",
        "page-4",
    ]
    assert "continue" not in third["metadata"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    everything = await client.list_all(CONFIGMAP, page_size=2)
    assert [i["metadata"]["name"] for i in everything] == [
        "page-0",
        "page-1",
        "page-2",
        "page-4",
        "page-9",
    ]


async def test_an_expired_continue_token_is_gone() -> None:
    client = fake()
    for index in range(3):
        await client.create(configmap(f"c-{index}"))
    first = await client.list(CONFIGMAP, limit=1)
    await client.create(configmap("c-later"))
    client.compact()
    with pytest.raises(Gone):
        await client.list(CONFIGMAP, limit=1, continue_=first["metadata"]["continue"])
    with pytest.raises(BadRequest):
        await client.list(CONFIGMAP, continue_="garbage")


async def test_an_exact_list_reads_the_past() -> None:
    client = fake()
    before = await client.create(configmap("before", v="1"))
    then = (await client.list(CONFIGMAP))["metadata"]["resourceVersion"]
    await client.create(configmap("after"))
    await client.patch(before, {"data": {"v": "2"}})
    past = await client.list(CONFIGMAP, resource_version=then, resource_version_match="Exact")
    assert [(i["metadata"]["name"], i["data"]) for i in past["items"]] == [("before", {"v": "1"})]
    assert past["metadata"]["resourceVersion"] == then
    now = await client.list(CONFIGMAP, resource_version=then, resource_version_match="NotOlderThan")
    assert {i["metadata"]["name"] for i in now["items"]} == {"before", "after"}
    client.compact()
    with pytest.raises(Gone):
        await client.list(CONFIGMAP, resource_version=then, resource_version_match="Exact")
    with pytest.raises(ServerTimeout, match="Too large resource version"):
        await client.list(CONFIGMAP, resource_version="999999")


# Watches.


async def test_watch_replays_from_a_version_then_streams_live() -> None:
    client = fake()
    collection: ListerWatcher = client.lister_watcher(CONFIGMAP, namespace="default")
    start = (await collection.list())["metadata"]["resourceVersion"]
    await client.create(configmap("watched", step="1"))
    await client.patch(CONFIGMAP, "watched", {"data": {"step": "2"}}, namespace="default")
    async with collection.watch(resource_version=start, timeout_seconds=30) as stream:
        assert await events(stream, 2) == [("ADDED", "watched"), ("MODIFIED", "watched")]

        async def later() -> None:
            await client.delete(CONFIGMAP, "watched", namespace="default")

        async with anyio.create_task_group() as group:
            group.start_soon(later)
            with anyio.fail_after(5):
                event = await anext(stream)
    assert event["type"] == "DELETED"
    assert (event["object"]["kind"], event["object"]["data"]) == ("ConfigMap", {"step": "2"})
    assert rv(event["object"]) == int(start) + 3  # the final state, at the deletion's version


async def test_watch_selects_and_reports_leaving_the_selection_as_deleted() -> None:
    client = fake()
    collection = client.lister_watcher(
        CONFIGMAP, namespace="default", label_selector="pick=me", field_selector=None
    )
    start = (await collection.list())["metadata"]["resourceVersion"]
    await client.create(configmap("skipped"))
    await client.create(configmap("elsewhere", "other", labels={"pick": "me"}))
    picked = await client.create(configmap("picked", labels={"pick": "me"}))
    await client.patch(picked, {"metadata": {"labels": {"pick": "no"}}})
    await client.patch(
        CONFIGMAP, "skipped", {"metadata": {"labels": {"pick": "me"}}}, namespace="default"
    )
    async with collection.watch(resource_version=start, timeout_seconds=30) as stream:
        assert await events(stream, 3) == [
            ("ADDED", "picked"),
            ("DELETED", "picked"),
            ("ADDED", "skipped"),
        ]
    listed = await collection.list()
    assert [i["metadata"]["name"] for i in listed["items"]] == ["skipped"]


async def test_a_watch_from_a_compacted_version_gets_410_and_ends() -> None:
    client = fake()
    created = await client.create(configmap("a"))
    await client.patch(created, {"data": {"b": "c"}})
    client.compact()
    async with client.watch(
        CONFIGMAP, resource_version=created["metadata"]["resourceVersion"]
    ) as w:
        with anyio.fail_after(5):
            received = [event async for event in w]
    [error] = received
    assert error["type"] == "ERROR"
    assert (error["object"]["code"], error["object"]["reason"]) == (410, "Expired")
    assert error["object"]["message"].startswith(f"too old resource version: {rv(created)}")


async def test_the_event_log_keeps_a_bounded_history() -> None:
    client = FakeClient(history=2)
    first = await client.create(configmap("first"))
    made = [await client.create(configmap(f"more-{index}")) for index in range(6)]
    async with client.watch(CONFIGMAP, resource_version=first["metadata"]["resourceVersion"]) as w:
        assert await events(w, 1) == [("ERROR", "")]
    # A recent version is still in the log.
    async with client.watch(CONFIGMAP, resource_version=str(rv(made[-2]))) as w:
        assert await events(w, 1) == [("ADDED", "more-5")]


async def test_a_watch_without_a_version_starts_with_the_current_objects() -> None:
    client = fake()
    first = await client.create(configmap("w1"))
    await client.create(configmap("w2"))
    async with client.watch(CONFIGMAP, namespace="default") as stream:
        assert await events(stream, 2) == [("ADDED", "w1"), ("ADDED", "w2")]
        last = await client.create(configmap("w3"))
        assert await events(stream, 1) == [("ADDED", "w3")]
    since = first["metadata"]["resourceVersion"]
    async with client.watch(CONFIGMAP, send_initial_events=True, resource_version=since) as w:
        initial = [await anext(w) for _ in range(4)]
    assert [e["type"] for e in initial] == ["ADDED", "ADDED", "ADDED", "BOOKMARK"]
    bookmark = initial[-1]["object"]["metadata"]
    assert bookmark == {
        "resourceVersion": last["metadata"]["resourceVersion"],
        "annotations": {"k8s.io/initial-events-end": "true"},
    }


async def test_a_watch_ends_at_its_timeout_on_exit_and_on_end_watches() -> None:
    client = fake()
    with anyio.fail_after(5):
        async with client.watch(CONFIGMAP, resource_version="0", timeout_seconds=0) as stream:
            assert [event async for event in stream] == []

    opened = anyio.Event()

    async def wait_out(results: list[list[Obj]]) -> None:
        async with client.watch(CONFIGMAP, resource_version="0") as stream:
            opened.set()
            results.append([event async for event in stream])

    results: list[list[Obj]] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(wait_out, results)
            await opened.wait()
            client.end_watches()
    assert results == [[]]

    async with client.watch(CONFIGMAP) as stream:
        pass
    await client.create(configmap("after-exit"))
    with anyio.fail_after(5):
        assert [event async for event in stream] == []


async def test_a_refused_watch_fails_on_entry() -> None:
    client = fake()
    with pytest.raises(BadRequest):
        async with client.watch(CONFIGMAP, label_selector="a in ("):
            pytest.fail("the watch should have been refused")
    with pytest.raises(BadRequest):
        async with client.watch(CONFIGMAP, resource_version="not-a-number"):
            pytest.fail("the watch should have been refused")


# Copies, seeds, interface.


async def test_results_and_inputs_are_private_copies() -> None:
    client = fake()
    sent = configmap("copied", v="1")
    created = await client.create(sent)
    sent["data"]["v"] = "changed by the caller"
    created["data"]["v"] = "changed by the caller"
    got = await client.get(CONFIGMAP, "copied", namespace="default")
    assert got["data"] == {"v": "1"}
    got["metadata"]["labels"] = {"mutated": "yes"}
    listing = await client.list(CONFIGMAP)
    listing["items"][0]["data"]["v"] = "mutated"
    assert await client.get(CONFIGMAP, "copied", namespace="default") == {
        **created,
        "data": {"v": "1"},
    }
    with pytest.raises(TypeError):
        await client.create(configmap("not-json", v=object()))  # type: ignore[arg-type]


async def test_objects_are_preloaded_with_status_and_seen_by_watches() -> None:
    running = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "fixed-uid"},
        "status": {"phase": "Running"},
    }
    widget = custom(WIDGET, "w")
    client = FakeClient(objects=[running, widget], crds=[WIDGET_CRD])
    got = await client.get(POD, "p", namespace="default")
    assert got["status"] == {"phase": "Running"}
    assert got["metadata"]["uid"] == "fixed-uid"
    assert rv(await client.get(WIDGET, "w", namespace="default")) == rv(got) + 1
    [seeded] = client.seed(configmap("later"))
    assert rv(seeded) == rv(got) + 2
    with pytest.raises(AlreadyExists):
        client.seed(configmap("later"))
    async with client.watch(POD, resource_version="0") as stream:
        assert await events(stream, 1) == [("ADDED", "p")]


async def test_the_fake_is_a_client_a_reader_and_a_lister_watcher_source() -> None:
    client = FakeClient()
    as_client: Client = client
    reader: Reader = client
    source: ListerWatcherSource = client
    assert isinstance(as_client, Client)
    assert isinstance(reader, FakeClient)
    assert source.lister_watcher(CONFIGMAP) is not None
    async with client as entered:
        assert entered is client


async def test_the_write_guard_sees_every_write() -> None:
    client = fake()
    seen: list[tuple[str, str]] = []
    client.write_guard = lambda method, path: seen.append((method, path))
    created = await client.create(deployment("web"))
    await client.update_status({**created, "status": {"replicas": 1}})
    await client.patch_scale(DEPLOYMENT, "web", {"spec": {"replicas": 2}}, namespace="default")
    await client.get(DEPLOYMENT, "web", namespace="default")  # reads are never guarded
    await client.list(DEPLOYMENT)
    await client.delete(DEPLOYMENT, "web", namespace="default")
    path = "/apis/apps/v1/namespaces/default/deployments"
    assert seen == [
        ("POST", path),
        ("PUT", f"{path}/web/status"),
        ("PATCH", f"{path}/web/scale"),
        ("DELETE", f"{path}/web"),
    ]

    def refuse(method: str, path: str) -> None:
        raise PermissionError(f"{method} {path} refused")

    client.write_guard = refuse
    with pytest.raises(PermissionError):
        await client.create(configmap("refused"))
    with pytest.raises(NotFound):
        await client.get(CONFIGMAP, "refused", namespace="default")


async def test_kinds_can_be_registered_directly() -> None:
    metrics = FakeKind(gvk=GVK("metrics.k8s.io", "v1beta1", "PodMetrics"), plural="pods")
    client = FakeClient(kinds=[metrics])
    obj = {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {"name": "p", "namespace": "default"},
    }
    await client.create(obj)
    assert (await client.list(metrics.gvk))["items"][0]["metadata"]["name"] == "p"


# Real informers and caches on the fake.


class Recorder:
    """A ResourceEventHandler writing down what it is told, as (what, name, data) tuples."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self.events.append(("add", obj["metadata"]["name"], is_in_initial_list))

    def on_update(self, old: Obj, new: Obj) -> None:
        self.events.append(("update", new["metadata"]["name"], (old["data"], new["data"])))

    def on_delete(self, obj: Obj) -> None:
        self.events.append(("delete", obj["metadata"]["name"], obj["data"]))


async def _is(value: bool) -> bool:
    return value


async def test_a_shared_informer_sees_adds_updates_and_deletes_in_order() -> None:
    client = fake()
    await client.create(configmap("existing", v="0"))
    await client.create(configmap("elsewhere", "other"))
    informer = SharedInformer(
        client.lister_watcher(CONFIGMAP, namespace="default"), name="cm", backoff=FAST
    )
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        with anyio.fail_after(5):
            await informer.wait_for_sync()
        created = await client.create(configmap("new", v="1"))
        await client.patch(created, {"data": {"v": "2"}})
        await client.create(configmap("ignored", "other"))
        await client.delete(created)
        await client.delete(CONFIGMAP, "existing", namespace="default")
        await eventually(lambda: _is(len(recorder.events) == 5))
        group.cancel_scope.cancel()
    assert recorder.events == [
        ("add", "existing", True),
        ("add", "new", False),
        ("update", "new", ({"v": "1"}, {"v": "2"})),
        ("delete", "new", {"v": "2"}),
        ("delete", "existing", {"v": "0"}),
    ]
    assert informer.indexer.keys() == []


async def test_a_cache_on_the_fake_follows_its_writes() -> None:
    client = fake()
    await client.create(configmap("before", v="1"))
    cache = Cache(client, sync_timeout=5)
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        assert (await cache.get(CONFIGMAP, "before", namespace="default"))["data"] == {"v": "1"}
        await client.create(configmap("added", labels={"app": "x"}))
        await client.patch(CONFIGMAP, "before", {"data": {"v": "2"}}, namespace="default")

        async def caught_up() -> bool:
            listing = await cache.list(CONFIGMAP, namespace="default", label_selector="app=x")
            got = await cache.get(CONFIGMAP, "before", namespace="default")
            return [i["metadata"]["name"] for i in listing["items"]] == ["added"] and got[
                "data"
            ] == {"v": "2"}

        await eventually(caught_up)
        await client.delete(CONFIGMAP, "added", namespace="default")

        async def gone() -> bool:
            try:
                await cache.get(CONFIGMAP, "added", namespace="default")
            except NotFound:
                return True
            return False

        await eventually(gone)
        group.cancel_scope.cancel()


async def test_a_reflector_relists_when_its_version_was_compacted() -> None:
    client = fake()
    await client.create(configmap("a", v="1"))
    informer = SharedInformer(client.lister_watcher(CONFIGMAP), name="cm", backoff=FAST)
    recorder = Recorder()
    informer.add_event_handler(recorder)
    async with anyio.create_task_group() as group:
        group.start_soon(informer.run)
        with anyio.fail_after(5):
            await informer.wait_for_sync()
        assert informer.reflector.relists == 1
        # Other kinds move the version on; the ConfigMap watch's last version falls out of the
        # log, and its stream ends: the re-watch gets 410 and the reflector lists again.
        await client.create(deployment("other"))
        client.compact()
        client.end_watches()
        await eventually(lambda: _is(informer.reflector.relists == 2))
        await client.patch(CONFIGMAP, "a", {"data": {"v": "2"}}, namespace="default")
        await eventually(lambda: _is(len(recorder.events) == 3))
        group.cancel_scope.cancel()
    # The relist reports what the store held as updates (as client-go), then the watch goes on.
    assert recorder.events == [
        ("add", "a", True),
        ("update", "a", ({"v": "1"}, {"v": "1"})),
        ("update", "a", ({"v": "1"}, {"v": "2"})),
    ]
