"""Webhooks called by a real kube-apiserver: conversion between two served versions of a CRD,
defaulting and validation seen through kubectl, and a server that survives bad input and a
certificate rotated on disk. testenv's ``webhooks`` fixture installs the configurations."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import anyio
import anyio.streams.tls
import pytest
import yaml

from reconcile import GVK, Manager, webhook_managed_by
from reconcile.objects import Obj
from reconcile.webhook import AdmissionError, WebhookServer, mutate_path, validate_path
from testenv import (
    ControlPlane,
    WebhookInstaller,
    WebhookInstallOptions,
    WebhookServing,
    manager_for,
    running,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

GROUP = "webhooks.example.com"
GADGET = GVK(GROUP, "v1", "Gadget")
OLD_GADGET = GVK(GROUP, "v1alpha1", "Gadget")


def _version(name: str, spec: Obj, *, storage: bool) -> Obj:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": spec}}}
    return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": schema}}


CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "names": {
            "kind": "Gadget",
            "listKind": "GadgetList",
            "plural": "gadgets",
            "singular": "gadget",
        },
        "scope": "Namespaced",
        # v1alpha1 had a flat colour; v1 nests it under appearance and renames size to count.
        "versions": [
            _version(
                "v1alpha1",
                {"size": {"type": "integer"}, "color": {"type": "string"}},
                storage=False,
            ),
            _version(
                "v1",
                {
                    "count": {"type": "integer"},
                    "appearance": {"type": "object", "properties": {"color": {"type": "string"}}},
                },
                storage=True,
            ),
        ],
        # Written as for a cluster (a Service); testenv points it at the test's server.
        "conversion": {
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {"service": {"name": "webhook", "namespace": "system"}},
                "conversionReviewVersions": ["v1"],
            },
        },
    },
}


class GadgetV1alpha1:
    """The v1alpha1 spoke; v1 is the hub."""

    def convert_to(self, src: Obj, hub: Obj) -> None:
        spec = src.get("spec") or {}
        hub["spec"] = {"count": spec.get("size", 0)}
        if "color" in spec:
            hub["spec"]["appearance"] = {"color": spec["color"]}

    def convert_from(self, hub: Obj, dst: Obj) -> None:
        spec = hub.get("spec") or {}
        dst["spec"] = {"size": spec.get("count", 0)}
        if "color" in spec.get("appearance", {}):
            dst["spec"]["color"] = spec["appearance"]["color"]


class GadgetDefaulter:
    async def default(self, obj: Obj) -> None:
        obj.setdefault("spec", {}).setdefault("appearance", {}).setdefault("color", "blue")


class GadgetValidator:
    async def validate_create(self, obj: Obj) -> Sequence[str] | None:
        return self._check(obj)

    async def validate_update(self, old: Obj, new: Obj) -> Sequence[str] | None:
        return self._check(new)

    async def validate_delete(self, obj: Obj) -> Sequence[str] | None:
        return None

    def _check(self, obj: Obj) -> Sequence[str]:
        name = obj["metadata"].get("name")
        if name == "explode":
            raise KeyError("the validator crashed on purpose")
        count = obj["spec"].get("count", 0)
        if count > 10:
            raise AdmissionError(f"spec.count must be at most 10, got {count}", code=422)
        return ["spec.count is 0: this gadget does nothing"] if count == 0 else []


def _configuration(kind: str, name: str, path: str, namespace: str) -> Obj:
    webhook = {
        "name": f"{name}.{GROUP}",
        "clientConfig": {"service": {"name": "webhook", "namespace": "system", "path": path}},
        "rules": [
            {
                "apiGroups": [GROUP],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["gadgets"],
            }
        ],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    metadata = {"name": f"{name}-{namespace}"}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "webhooks": [webhook],
    }


@asynccontextmanager
async def serving_gadgets(
    host: ControlPlane, webhooks: WebhookInstaller, namespace: str
) -> AsyncIterator[tuple[Manager, WebhookServing]]:
    options = WebhookInstallOptions(
        mutating_webhooks=[
            _configuration(
                "MutatingWebhookConfiguration", "mgadget", mutate_path(GADGET), namespace
            )
        ],
        validating_webhooks=[
            _configuration(
                "ValidatingWebhookConfiguration", "vgadget", validate_path(GADGET), namespace
            )
        ],
        crds=[CRD],
    )
    serving = await webhooks.install(options)
    server = WebhookServer(host=serving.host, port=serving.port, cert_dir=serving.cert_dir)
    manager = await manager_for(host, webhook_server=server)
    (
        webhook_managed_by(manager)
        .for_(GADGET)
        .with_defaulter(GadgetDefaulter())
        .with_validator(GadgetValidator())
        .with_conversion({"v1alpha1": GadgetV1alpha1()})
        .complete()
    )
    async with running(manager):
        yield manager, serving


def _gadget(gvk: GVK, name: str, namespace: str, spec: Obj) -> Obj:
    metadata = {"name": name, "namespace": namespace}
    return {"apiVersion": gvk.api_version, "kind": gvk.kind, "metadata": metadata, "spec": spec}


def _path(gvk: GVK, namespace: str, name: str = "") -> str:
    base = f"/apis/{gvk.group}/{gvk.version}/namespaces/{namespace}/gadgets"
    return f"{base}/{name}" if name else base


async def test_objects_convert_between_versions_through_the_webhook(
    host: ControlPlane, webhooks: WebhookInstaller, namespace: str
) -> None:
    async with serving_gadgets(host, webhooks, namespace):
        old = _gadget(OLD_GADGET, "made-old", namespace, {"size": 3, "color": "red"})
        await host.request("POST", _path(OLD_GADGET, namespace), old)
        new = _gadget(GADGET, "made-new", namespace, {"count": 5, "appearance": {"color": "green"}})
        await host.request("POST", _path(GADGET, namespace), new)

        as_v1 = await host.request("GET", _path(GADGET, namespace, "made-old"))
        assert as_v1["apiVersion"] == f"{GROUP}/v1"
        assert as_v1["spec"] == {"count": 3, "appearance": {"color": "red"}}
        as_old = await host.request("GET", _path(OLD_GADGET, namespace, "made-new"))
        assert as_old["apiVersion"] == f"{GROUP}/v1alpha1"
        assert as_old["spec"] == {"size": 5, "color": "green"}
        listed = await host.request("GET", _path(OLD_GADGET, namespace))
        specs = {item["metadata"]["name"]: item["spec"] for item in listed["items"]}
        assert specs == {
            "made-old": {"size": 3, "color": "red"},
            "made-new": {"size": 5, "color": "green"},
        }


async def _kubectl(host: ControlPlane, *args: str, obj: Obj | None = None) -> tuple[int, str, str]:
    data = yaml.safe_dump(obj).encode() if obj is not None else None
    done = await host.kubectl(*args, input=data, check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_kubectl_apply_shows_defaults_refusals_and_warnings(
    host: ControlPlane, webhooks: WebhookInstaller, namespace: str
) -> None:
    async with serving_gadgets(host, webhooks, namespace):
        code, out, err = await _kubectl(
            host, "apply", "-f", "-", obj=_gadget(GADGET, "plain", namespace, {"count": 0})
        )
        assert code == 0, err
        assert "gadget.webhooks.example.com/plain created" in out
        assert "Warning: spec.count is 0: this gadget does nothing" in err
        code, out, err = await _kubectl(
            host,
            "get",
            "gadgets.v1.webhooks.example.com",
            "plain",
            "-n",
            namespace,
            "-o",
            "jsonpath={.spec.appearance.color}",
        )
        assert (code, out) == (0, "blue"), err

        big = _gadget(GADGET, "big", namespace, {"count": 11})
        code, out, err = await _kubectl(host, "apply", "-f", "-", obj=big)
        assert code != 0
        assert f'admission webhook "vgadget.{GROUP}" denied the request' in err
        assert "spec.count must be at most 10, got 11" in err

        crash = _gadget(GADGET, "explode", namespace, {"count": 1})
        code, out, err = await _kubectl(host, "apply", "-f", "-", obj=crash)
        assert code != 0
        assert "the validator crashed on purpose" in err


async def _post(serving: WebhookServing, path: str, body: bytes) -> tuple[int, Any]:
    context = ssl.create_default_context(cadata=serving.ca_pem.decode())
    headers = {"Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(serving.url(path), data=body, headers=headers, ssl=context) as response,
    ):
        return response.status, await response.json(content_type=None)


async def _peer_certificate(serving: WebhookServing) -> bytes:
    context = ssl.create_default_context(cadata=serving.ca_pem.decode())
    stream = await anyio.connect_tcp(serving.host, serving.port, tls=True, ssl_context=context)
    async with stream:
        der = stream.extra(anyio.streams.tls.TLSAttribute.peer_certificate_binary)
    assert der is not None
    return der


async def test_the_server_survives_bad_input_and_a_rotated_certificate(
    host: ControlPlane, webhooks: WebhookInstaller, namespace: str
) -> None:
    async with serving_gadgets(host, webhooks, namespace) as (manager, serving):
        status, body = await _post(serving, mutate_path(GADGET), b'{"kind": "AdmissionReview"')
        assert (status, body["response"]["status"]["code"]) == (400, 400)
        huge = b'{"padding": "' + b"x" * (8 * 1024 * 1024) + b'"}'
        status, body = await _post(serving, mutate_path(GADGET), huge)
        assert (status, body["code"]) == (413, 413)
        status, body = await _post(serving, "/convert", b"[]")
        assert status == 400

        before = await _peer_certificate(serving)
        serving.ca.issue_serving([serving.host]).write(serving.cert_dir, "tls")
        after = await _peer_certificate(serving)
        assert after != before  # the next handshake, no poll interval waited for

        # The apiserver still gets answers, from the same process, after all that.
        gadget = _gadget(GADGET, "after-all", namespace, {"count": 2})
        created = await host.request("POST", _path(GADGET, namespace), gadget)
        assert created["spec"]["appearance"] == {"color": "blue"}
        registry = manager.registry
        total = registry.get_sample_value(
            "controller_runtime_webhook_requests_total",
            {"webhook": mutate_path(GADGET), "code": "200"},
        )
        assert total is not None
        assert total >= 1
