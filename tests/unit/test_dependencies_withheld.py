"""The dependencies distributor on a fake host: dependencies it may not read, or must not attach.

The detector's access reviews are played by publishing to a ``PermittedKinds`` (and opening the
informers of the kinds it would watch); the fake records every request for a Secret, so "not
requested" is checked, not assumed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from controllers.api import (
    RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_PERMANENT_ID_LABEL,
    crd_paths,
)
from controllers.binding.controller import WORKS_SYNCED_CONDITION, BindingController
from controllers.dependencies import DEPENDENCIES_ANNOTATION, DependenciesDistributor
from controllers.dependencies.withheld import (
    DEPENDENCY_FORBIDDEN_REASON,
    DEPENDENCY_RESERVED_REASON,
)
from controllers.interpreter import DependentObjectReference, Interpreter
from controllers.permittedkinds import Denial, PermittedKinds
from reconcile import (
    EVENT_GVK,
    GVK,
    Cache,
    CachedClient,
    EventBroadcaster,
    Forbidden,
    NotFound,
    Obj,
    Request,
    Result,
    WorkQueue,
    get_condition,
)
from testenv import FakeClient, eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

NS = "apps"
DEPLOYMENT = GVK("apps", "v1", "Deployment")
CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
SECRETS_DENIED = {SECRET: Denial("", "secrets", "get")}


class RecordingFake(FakeClient):
    """The fake apiserver, remembering each read of a Secret (get, list, watch)."""

    secret_reads: list[str]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.secret_reads = []

    async def get(self, gvk: GVK[Any], name: str, **kwargs: Any) -> Any:
        if gvk.kind == "Secret":
            self.secret_reads.append(f"get {name}")
        return await super().get(gvk, name, **kwargs)

    async def list(self, gvk: GVK[Any], **kwargs: Any) -> Any:
        if gvk.kind == "Secret":
            self.secret_reads.append("list")
        return await super().list(gvk, **kwargs)


class CustomDependencies(Interpreter):
    """An interpreter whose InterpretDependency answers what a customization would."""

    def __init__(self, answer: list[DependentObjectReference]) -> None:
        super().__init__()
        self.answer = answer

    async def get_dependencies(self, obj: Obj) -> list[DependentObjectReference]:
        return list(self.answer)


def _web() -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS, "uid": "web-uid"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{"name": "web", "image": "nginx"}],
                    "volumes": [
                        {"name": "config", "configMap": {"name": "web-config"}},
                        {"name": "secret", "secret": {"secretName": "web-secret"}},
                    ],
                },
            },
        },
    }


def _binding() -> Obj:
    return {
        "apiVersion": RESOURCE_BINDING_GVK.api_version,
        "kind": RESOURCE_BINDING_GVK.kind,
        "metadata": {
            "name": "web-deployment",
            "namespace": NS,
            "labels": {RESOURCE_BINDING_PERMANENT_ID_LABEL: "id-web"},
        },
        "spec": {
            "resource": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "web",
                "namespace": NS,
            },
            "propagateDeps": True,
            "clusters": [{"name": "member1"}],
        },
    }


def _object(gvk: GVK, name: str, namespace: str = NS) -> Obj:
    return {
        "apiVersion": gvk.api_version,
        "kind": gvk.kind,
        "metadata": {"name": name, "namespace": namespace},
    }


@dataclass
class Host:
    fake: RecordingFake
    distributor: DependenciesDistributor
    kinds: PermittedKinds
    queue: WorkQueue[Request] = field(default_factory=WorkQueue)
    markers: int = 0

    async def reconcile(self) -> Result | None:
        return await self.distributor.reconcile(Request("web-deployment", NS))

    async def attached(self, name: str) -> Obj | None:
        try:
            binding: Obj = await self.fake.get(RESOURCE_BINDING_GVK, name, namespace=NS)
        except NotFound:
            return None
        return binding

    async def events(self, reason: str) -> list[Obj]:
        """The Events of ``reason``, once every Event recorded so far is written: a marker is
        recorded last and waited for (the broadcaster writes in order)."""
        self.markers += 1
        marker = f"marker {self.markers}"
        self.distributor.recorder.event(_binding(), "Normal", "Marker", marker)

        async def written() -> list[Obj] | None:
            listed = (await self.fake.list(EVENT_GVK, namespace=NS))["items"]
            done = any(e.get("message") == marker for e in listed)
            return [e for e in listed if e.get("reason") == reason] if done else None

        return await eventually(written, timeout=10)


@asynccontextmanager
async def host(
    *,
    interpreter: Interpreter | None = None,
    extra: tuple[Obj, ...] = (),
    kinds: PermittedKinds | None = None,
) -> AsyncIterator[Host]:
    objects = (
        _web(),
        _object(CONFIGMAP, "web-config"),
        _object(SECRET, "web-secret"),
        _binding(),
        *extra,
    )
    fake = RecordingFake(crds=crd_paths(), objects=objects)
    cache = Cache(fake, sync_timeout=10)
    broadcaster = EventBroadcaster(fake)
    recorder = broadcaster.recorder("reconcile-dependencies-distributor")
    kinds = kinds or PermittedKinds()
    distributor = DependenciesDistributor(
        CachedClient(fake, cache), interpreter or Interpreter(), recorder, kinds=kinds
    )
    async with anyio.create_task_group() as group:
        await group.start(cache.run)
        await group.start(broadcaster.run)
        # What the detector would hold: informers of the kinds it watches.
        for gvk in (DEPLOYMENT, CONFIGMAP, RESOURCE_BINDING_GVK):
            cache.get_informer(gvk)
        await cache.wait_for_cache_sync()
        state = Host(fake, distributor, kinds)
        distributor.queue = state.queue
        yield state
        group.cancel_scope.cancel()


def _denying_secrets() -> PermittedKinds:
    kinds = PermittedKinds()
    kinds.expect()
    kinds.publish({DEPLOYMENT, CONFIGMAP}, SECRETS_DENIED)
    return kinds


async def test_a_forbidden_kind_is_not_requested_and_warned_about_once_per_generation() -> None:
    async with host(kinds=_denying_secrets()) as env:
        assert await env.reconcile() is None
        assert await env.attached("web-config-configmap") is not None
        assert await env.attached("web-secret-secret") is None
        assert env.fake.secret_reads == []

        assert await env.reconcile() is None  # the same generation: no second Warning
        (event,) = await env.events(DEPENDENCY_FORBIDDEN_REASON)
        assert event.get("count", 1) == 1
        assert event["type"] == "Warning"
        assert event["involvedObject"]["name"] == "web-deployment"
        assert f"Secret {NS}/web-secret (v1)" in event["message"]
        assert "get secrets" in event["message"]

        # The dependencies are recorded all the same: a grant later finds the binding by them.
        binding = await env.fake.get(RESOURCE_BINDING_GVK, "web-deployment", namespace=NS)
        recorded = json.loads(binding["metadata"]["annotations"][DEPENDENCIES_ANNOTATION])
        assert {r["kind"] for r in recorded} == {"ConfigMap", "Secret"}

        binding["spec"]["clusters"] = [{"name": "member2"}]
        await env.fake.update(binding)  # a new generation: warned again
        await eventually(lambda: _generation_cached(env, binding), timeout=10)
        await env.reconcile()
        (event,) = await env.events(DEPENDENCY_FORBIDDEN_REASON)
        assert event["count"] == 2, "the repeat is counted on the same Event"
        assert env.fake.secret_reads == []


async def _generation_cached(env: Host, binding: Mapping[str, Any]) -> bool:
    cached = await env.distributor.client.get(RESOURCE_BINDING_GVK, "web-deployment", namespace=NS)
    return bool(cached["metadata"]["generation"] == binding["metadata"]["generation"] + 1)


async def test_a_granted_kind_requeues_its_dependents_and_is_then_attached() -> None:
    async with host(kinds=_denying_secrets()) as env:
        env.kinds.subscribe(env.distributor.on_permitted)  # as setup() subscribes it
        await env.reconcile()
        assert await env.attached("web-secret-secret") is None

        # The next discovery round: Secrets permitted, their informer opened by the detector.
        env.distributor.client.cache.get_informer(SECRET)
        env.kinds.publish({DEPLOYMENT, CONFIGMAP, SECRET}, {})
        assert len(env.queue) == 1
        assert await env.queue.get() == Request("web-deployment", NS)

        await env.reconcile()
        attached = await env.attached("web-secret-secret")
        assert attached is not None
        assert attached["spec"]["requiredBy"][0]["name"] == "web-deployment"


async def test_a_revoked_kind_keeps_what_was_attached() -> None:
    async with host() as env:
        await env.reconcile()  # nothing reviewed: Secrets read live, as without a detector
        assert await env.attached("web-secret-secret") is not None

        env.kinds.publish({DEPLOYMENT, CONFIGMAP}, SECRETS_DENIED)
        reads = list(env.fake.secret_reads)
        await env.reconcile()
        kept = await env.attached("web-secret-secret")
        assert kept is not None, "a revoked permission must not delete member copies"
        assert [r["name"] for r in kept["spec"]["requiredBy"]] == ["web-deployment"]
        assert env.fake.secret_reads == reads


async def test_dependencies_wait_for_the_first_discovery_round() -> None:
    kinds = PermittedKinds()
    kinds.expect()
    async with host(kinds=kinds) as env:
        result = await env.reconcile()
        assert result is not None
        assert result.requeue_after
        assert env.fake.secret_reads == []
        assert await env.attached("web-config-configmap") is None


async def test_the_cluster_namespace_and_reserved_namespaces_are_never_attached() -> None:
    credentials = _object(SECRET, "member1", "karmada-cluster")
    system = _object(CONFIGMAP, "settings", "kube-system")
    answer = [
        DependentObjectReference("v1", "Secret", namespace="karmada-cluster", name="member1"),
        DependentObjectReference("v1", "ConfigMap", namespace="kube-system", name="settings"),
        DependentObjectReference("v1", "ConfigMap", namespace=NS, name="web-config"),
    ]
    interpreter = CustomDependencies(answer)
    async with host(interpreter=interpreter, extra=(credentials, system)) as env:
        assert await env.reconcile() is None
        assert await env.attached("web-config-configmap") is not None
        assert await env.attached("member1-secret") is None
        assert await env.attached("settings-configmap") is None
        assert env.fake.secret_reads == []
        (event,) = await env.events(DEPENDENCY_RESERVED_REASON)
        assert "karmada-cluster is a reserved namespace" in event["message"]
        assert "kube-system is a reserved namespace" in event["message"]


async def test_a_refusal_from_the_apiserver_is_withheld_too() -> None:
    # A kind the detector did not review (it does not run here): read live; a 403 is reported
    # as the review would have been, and the other dependencies still propagate.
    async with host() as env:
        original = env.fake.get

        async def refusing(gvk: GVK, name: str, **kwargs: Any) -> Obj:
            if gvk == SECRET:
                raise Forbidden(
                    {"code": 403, "reason": "Forbidden", "details": {"kind": "secrets"}}
                )
            obj: Obj = await original(gvk, name, **kwargs)
            return obj

        env.fake.get = refusing  # type: ignore[method-assign]
        assert await env.reconcile() is None
        assert await env.attached("web-config-configmap") is not None
        (event,) = await env.events(DEPENDENCY_FORBIDDEN_REASON)
        assert "get secrets" in event["message"]


async def test_the_binding_controller_does_not_read_a_forbidden_template() -> None:
    # An attached binding of a Secret made while Secrets were granted: its Works are kept and
    # WorksSynced names the permission, with no request for the Secret.
    attached = {
        "apiVersion": RESOURCE_BINDING_GVK.api_version,
        "kind": RESOURCE_BINDING_GVK.kind,
        "metadata": {"name": "web-secret-secret", "namespace": NS},
        "spec": {
            "resource": {
                "apiVersion": "v1",
                "kind": "Secret",
                "name": "web-secret",
                "namespace": NS,
            },
            "requiredBy": [
                {"namespace": NS, "name": "web-deployment", "clusters": [{"name": "m1"}]}
            ],
        },
    }
    async with host(kinds=_denying_secrets(), extra=(attached,)) as env:
        client = env.distributor.client
        controller = BindingController(client, Interpreter(), env.distributor.recorder, env.kinds)
        assert await controller.reconcile(Request("web-secret-secret", NS)) is None
        assert env.fake.secret_reads == []
        written = await env.fake.get(RESOURCE_BINDING_GVK, "web-secret-secret", namespace=NS)
        condition = get_condition(written, WORKS_SYNCED_CONDITION)
        assert condition is not None
        assert condition["status"] == "False"
        assert "RBAC does not allow get secrets" in condition["message"]
