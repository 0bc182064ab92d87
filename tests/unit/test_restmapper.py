"""The REST mapper over a fake discovery: mapping, caching, refresh on a miss, its rate limit."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from reconcile.client.restmapper import RESTMapper, parse_resource_list
from reconcile.errors import NoKindMatch, NotFound, ServiceUnavailable, api_error
from reconcile.gvk import GVK
from tests.builders import FakeClock

asyncio_test = pytest.mark.asyncio(loop_scope="session")


CORE = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {
            "name": "configmaps",
            "singularName": "configmap",
            "namespaced": True,
            "kind": "ConfigMap",
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            "shortNames": ["cm"],
        },
        {"name": "namespaces", "singularName": "", "namespaced": False, "kind": "Namespace"},
        {"name": "namespaces/status", "namespaced": False, "kind": "Namespace"},
    ],
}
APPS = {
    "kind": "APIResourceList",
    "groupVersion": "apps/v1",
    "resources": [
        {
            "name": "deployments",
            "singularName": "deployment",
            "namespaced": True,
            "kind": "Deployment",
            "verbs": ["get", "list", "patch"],
            "shortNames": ["deploy"],
        },
        {"name": "deployments/scale", "namespaced": True, "kind": "Scale", "group": "autoscaling"},
        {"name": "deployments/status", "namespaced": True, "kind": "Deployment"},
    ],
}
WIDGETS = {
    "kind": "APIResourceList",
    "groupVersion": "example.com/v1",
    "resources": [
        {"name": "widgets", "singularName": "widget", "namespaced": True, "kind": "Widget"},
        # A second group also calls something "deploy": the first group in server order wins.
        {"name": "gizmos", "namespaced": False, "kind": "Gizmo", "shortNames": ["deploy"]},
    ],
}


def group_list(*groups: tuple[str, str]) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "groups": [
            {
                "name": name,
                "versions": [{"groupVersion": f"{name}/{version}", "version": version}],
                "preferredVersion": {"groupVersion": f"{name}/{version}", "version": version},
            }
            for name, version in groups
        ],
    }


class FakeDiscovery:
    """Serves discovery documents by path, counting GETs; missing paths answer 404."""

    def __init__(self, documents: dict[str, Any]) -> None:
        self.documents = documents
        self.gets: list[str] = []
        self.failing: set[str] = set()

    async def __call__(self, path: str) -> Any:
        self.gets.append(path)
        await anyio.lowlevel.checkpoint()  # let concurrent lookups interleave
        if path in self.failing:
            raise api_error(503, {"kind": "Status", "reason": "ServiceUnavailable"})
        if path not in self.documents:
            raise api_error(404, b"404 page not found")
        return self.documents[path]


def discovery() -> FakeDiscovery:
    return FakeDiscovery(
        {
            "/api": {"kind": "APIVersions", "versions": ["v1"]},
            "/api/v1": CORE,
            "/apis": group_list(("apps", "v1")),
            "/apis/apps/v1": APPS,
        }
    )


def test_resource_list_parsing_attaches_subresources_to_their_parent() -> None:
    parsed = {r.plural: (r, names) for r, names in parse_resource_list("apps", "v1", APPS)}
    assert set(parsed) == {"deployments"}  # "Scale" is not a kind this group serves
    deployments, names = parsed["deployments"]
    assert deployments.gvk == GVK("apps", "v1", "Deployment")
    assert deployments.subresources == {"scale", "status"}
    assert deployments.verbs == {"get", "list", "patch"}
    assert names == {"deployments", "deployment", "deploy"}


@asyncio_test
async def test_maps_core_and_group_kinds_with_scope() -> None:
    fetch = discovery()
    mapper = RESTMapper(fetch, clock=FakeClock(100.0, sleeps_advance=True))
    configmaps = await mapper.resource_for(GVK("", "v1", "ConfigMap"))
    assert (configmaps.plural, configmaps.namespaced) == ("configmaps", True)
    assert configmaps.path("ns", "x") == "/api/v1/namespaces/ns/configmaps/x"
    namespaces = await mapper.resource_for(GVK("", "v1", "Namespace"))
    assert not namespaces.namespaced
    assert namespaces.subresources == {"status"}
    deployments = await mapper.resource_for(GVK("apps", "v1", "Deployment"))
    assert deployments.path("ns") == "/apis/apps/v1/namespaces/ns/deployments"
    # Lazy: one GET per group version, nothing else.
    assert fetch.gets == ["/api/v1", "/apis/apps/v1"]


@asyncio_test
async def test_answers_come_from_the_cache() -> None:
    fetch = discovery()
    mapper = RESTMapper(fetch, clock=FakeClock(100.0, sleeps_advance=True))
    for _ in range(3):
        await mapper.resource_for(GVK("apps", "v1", "Deployment"))
    assert fetch.gets == ["/apis/apps/v1"]


@asyncio_test
async def test_concurrent_misses_share_one_fetch() -> None:
    fetch = discovery()
    mapper = RESTMapper(fetch, clock=FakeClock(100.0, sleeps_advance=True))
    async with anyio.create_task_group() as tasks:
        for _ in range(5):
            tasks.start_soon(mapper.resource_for, GVK("apps", "v1", "Deployment"))
    assert fetch.gets == ["/apis/apps/v1"]


@asyncio_test
async def test_a_kind_added_later_is_found_after_the_refresh_interval() -> None:
    fetch, clock = discovery(), FakeClock(100.0, sleeps_advance=True)
    mapper = RESTMapper(fetch, clock=clock, min_refresh_interval=2.0)
    widget = GVK("example.com", "v1", "Widget")
    with pytest.raises(NoKindMatch, match="Widget"):
        await mapper.resource_for(widget)
    assert fetch.gets == ["/apis/example.com/v1"]

    fetch.documents["/apis/example.com/v1"] = WIDGETS  # the CRD gets installed
    clock.time += 1.0
    # Within the interval a miss does not refetch: a hot loop cannot flood discovery.
    with pytest.raises(NoKindMatch):
        await mapper.resource_for(widget)
    assert fetch.gets == ["/apis/example.com/v1"]

    clock.time += 1.5
    widgets = await mapper.resource_for(widget)
    assert widgets.plural == "widgets"
    assert fetch.gets == ["/apis/example.com/v1"] * 2


@asyncio_test
async def test_a_missing_kind_in_a_known_group_version_refetches_it() -> None:
    fetch, clock = discovery(), FakeClock(100.0, sleeps_advance=True)
    mapper = RESTMapper(fetch, clock=clock, min_refresh_interval=2.0)
    await mapper.resource_for(GVK("apps", "v1", "Deployment"))
    clock.time += 5
    with pytest.raises(NoKindMatch):
        await mapper.resource_for(GVK("apps", "v1", "StatefulSet"))
    assert fetch.gets == ["/apis/apps/v1", "/apis/apps/v1"]


@asyncio_test
async def test_discovery_errors_other_than_404_propagate() -> None:
    fetch = discovery()
    fetch.failing.add("/apis/apps/v1")
    mapper = RESTMapper(fetch, clock=FakeClock(100.0, sleeps_advance=True))
    with pytest.raises(ServiceUnavailable):
        await mapper.resource_for(GVK("apps", "v1", "Deployment"))
    # Not cached as "not served": once discovery recovers, the next lookup succeeds.
    fetch.failing.clear()
    assert (await mapper.resource_for(GVK("apps", "v1", "Deployment"))).plural == "deployments"


@asyncio_test
async def test_fetch_must_signal_404_with_not_found() -> None:
    fetch = discovery()
    with pytest.raises(NotFound):
        await fetch("/apis/nothing/v1")


@asyncio_test
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        pytest.param("configmaps", "ConfigMap", id="plural"),
        pytest.param("configmap", "ConfigMap", id="singular"),
        pytest.param("CM", "ConfigMap", id="short-name-any-case"),
        pytest.param("namespace", "Namespace", id="singular-from-kind"),
        pytest.param("deploy", "Deployment", id="first-group-wins"),
        pytest.param("deployments.apps", "Deployment", id="plural-dot-group"),
        pytest.param("gizmos", "Gizmo", id="custom-resource"),
    ],
)
async def test_lookup_by_name(name: str, kind: str) -> None:
    fetch = discovery()
    fetch.documents["/apis"] = group_list(("apps", "v1"), ("example.com", "v1"))
    fetch.documents["/apis/example.com/v1"] = WIDGETS
    mapper = RESTMapper(fetch, clock=FakeClock(100.0, sleeps_advance=True))
    assert (await mapper.resource_for_name(name)).gvk.kind == kind


@asyncio_test
async def test_lookup_by_name_survives_a_broken_group() -> None:
    fetch = discovery()
    fetch.documents["/apis"] = group_list(("apps", "v1"), ("example.com", "v1"))
    fetch.failing.add("/apis/example.com/v1")
    mapper = RESTMapper(fetch, clock=FakeClock(100.0, sleeps_advance=True))
    assert (await mapper.resource_for_name("deploy")).gvk.kind == "Deployment"
    with pytest.raises(NoKindMatch, match=r"example\.com"):
        await mapper.resource_for_name("widgets")


@asyncio_test
async def test_lookup_by_name_refreshes_at_most_once_per_interval() -> None:
    fetch, clock = discovery(), FakeClock(100.0, sleeps_advance=True)
    mapper = RESTMapper(fetch, clock=clock, min_refresh_interval=2.0)
    with pytest.raises(NoKindMatch):
        await mapper.resource_for_name("widgets")
    gets = len(fetch.gets)
    with pytest.raises(NoKindMatch):
        await mapper.resource_for_name("widgets")
    assert len(fetch.gets) == gets

    fetch.documents["/apis"] = group_list(("apps", "v1"), ("example.com", "v1"))
    fetch.documents["/apis/example.com/v1"] = WIDGETS
    clock.time += 3
    assert (await mapper.resource_for_name("widgets")).gvk == GVK("example.com", "v1", "Widget")


@asyncio_test
async def test_invalidate_forgets_everything() -> None:
    fetch = discovery()
    mapper = RESTMapper(fetch, clock=FakeClock(100.0, sleeps_advance=True))
    await mapper.resource_for(GVK("", "v1", "ConfigMap"))
    mapper.invalidate()
    await mapper.resource_for(GVK("", "v1", "ConfigMap"))
    assert fetch.gets == ["/api/v1", "/api/v1"]
