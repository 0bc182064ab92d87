"""Each overrider changes an object like Karmada's, and fails with an error naming the entry."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from controllers.binding import OverriderError, apply_overriders
from reconcile import resolve_pointer

DIGEST = "sha256:50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c"
POD_SPEC = "/spec/template/spec"


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 2,
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {
                    "initContainers": [{"name": "init", "image": "busybox:1.36"}],
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.25",
                            "command": ["nginx"],
                            "args": ["-g", "daemon off;"],
                        },
                        {"name": "sidecar", "image": f"registry.example:5000/tools/envoy@{DIGEST}"},
                    ],
                },
            },
        },
    }


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "web", "image": "web:1", "command": ["serve"]}]},
    }


def job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl:5.34.0"}]}}},
    }


def cron_job() -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "pi", "image": "perl:5.34.0"}]}}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}},
    }


def config_map() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": "default"},
        "data": {
            "config.yaml": "server:\n  port: 8080\n  hosts:\n  - a.example\n",
            "settings.json": '{"log":{"level":"info"},"feature":true}',
            "plain": "not a document: [",
        },
    }


CASES = [
    pytest.param(
        deployment,
        {
            "imageOverrider": [
                {"component": "Registry", "operator": "replace", "value": "mirror.io"}
            ]
        },
        {
            f"{POD_SPEC}/containers/0/image": "mirror.io/nginx:1.25",
            f"{POD_SPEC}/containers/1/image": f"mirror.io/tools/envoy@{DIGEST}",
            f"{POD_SPEC}/initContainers/0/image": "busybox:1.36",
        },
        id="image without predicate changes every container of a Deployment but not init ones",
    ),
    pytest.param(
        deployment,
        {
            "imageOverrider": [
                {
                    "predicate": {"path": f"{POD_SPEC}/initContainers/0/image"},
                    "component": "Tag",
                    "operator": "replace",
                    "value": "1.37",
                }
            ]
        },
        {
            f"{POD_SPEC}/initContainers/0/image": "busybox:1.37",
            f"{POD_SPEC}/containers/0/image": "nginx:1.25",
        },
        id="image with a predicate path changes only that image",
    ),
    pytest.param(
        pod,
        {"imageOverrider": [{"component": "Repository", "operator": "add", "value": "-debug"}]},
        {"/spec/containers/0/image": "web-debug:1"},
        id="image without predicate finds a Pod's containers under spec",
    ),
    pytest.param(
        job,
        {
            "imageOverrider": [
                {"component": "Registry", "operator": "add", "value": "registry.k8s.io"}
            ]
        },
        {f"{POD_SPEC}/containers/0/image": "registry.k8s.io/perl:5.34.0"},
        id="image without predicate covers a Job's pod template",
    ),
    pytest.param(
        cron_job,
        {
            "imageOverrider": [
                {"component": "Registry", "operator": "add", "value": "registry.k8s.io"}
            ]
        },
        {"/spec/jobTemplate/spec/template/spec/containers/0/image": "perl:5.34.0"},
        id="image without predicate has no default path for a CronJob, like Karmada",
    ),
    pytest.param(
        deployment,
        {"commandOverrider": [{"containerName": "nginx", "operator": "add", "value": ["-t"]}]},
        {f"{POD_SPEC}/containers/0/command": ["nginx", "-t"]},
        id="command add appends to the named container's command",
    ),
    pytest.param(
        deployment,
        {"commandOverrider": [{"containerName": "sidecar", "operator": "add", "value": ["envoy"]}]},
        {f"{POD_SPEC}/containers/1/command": ["envoy"]},
        id="command add creates a missing command",
    ),
    pytest.param(
        deployment,
        {
            "argsOverrider": [
                {"containerName": "nginx", "operator": "remove", "value": ["daemon off;", "x"]}
            ]
        },
        {f"{POD_SPEC}/containers/0/args": ["-g"]},
        id="args remove drops the listed values and ignores absent ones",
    ),
    pytest.param(
        pod,
        {"argsOverrider": [{"containerName": "web", "operator": "add", "value": ["--port=80"]}]},
        {"/spec/containers/0/args": ["--port=80"], "/spec/containers/0/command": ["serve"]},
        id="args add on a Pod container",
    ),
    pytest.param(
        job,
        {"commandOverrider": [{"containerName": "pi", "operator": "add", "value": ["perl"]}]},
        {f"{POD_SPEC}/containers/0/command": ["perl"]},
        id="command add reaches a Job's pod template, as Karmada's since 2023",
    ),
    pytest.param(
        job,
        {"argsOverrider": [{"containerName": "pi", "operator": "add", "value": ["-Mbignum"]}]},
        {f"{POD_SPEC}/containers/0/args": ["-Mbignum"]},
        id="args add reaches a Job's pod template",
    ),
    pytest.param(
        cron_job,
        {"commandOverrider": [{"containerName": "pi", "operator": "add", "value": ["perl"]}]},
        {"/spec/jobTemplate/spec/template/spec/containers/0/command": ["perl"]},
        id="command add reaches a CronJob's jobTemplate",
    ),
    pytest.param(
        deployment,
        {"commandOverrider": [{"containerName": "other", "operator": "add", "value": ["x"]}]},
        {f"{POD_SPEC}/containers/0/command": ["nginx"]},
        id="command for a container that does not exist changes nothing",
    ),
    pytest.param(
        pod,
        {"labelsOverrider": [{"operator": "add", "value": {"tier": "front"}}]},
        {"/metadata/labels": {"tier": "front"}},
        id="labels add creates the missing labels map",
    ),
    pytest.param(
        deployment,
        {"labelsOverrider": [{"operator": "add", "value": {"app": "web", "env": "prod"}}]},
        {"/metadata/labels": {"app": "web", "env": "prod"}},
        id="labels add overwrites an existing key",
    ),
    pytest.param(
        deployment,
        {"labelsOverrider": [{"operator": "remove", "value": {"app": "", "missing": ""}}]},
        {"/metadata/labels": {}},
        id="labels remove drops present keys and skips missing ones",
    ),
    pytest.param(
        deployment,
        {"labelsOverrider": [{"operator": "replace", "value": {"app": "web", "missing": "x"}}]},
        {"/metadata/labels": {"app": "web"}},
        id="labels replace changes present keys and never adds",
    ),
    pytest.param(
        pod,
        {"labelsOverrider": [{"operator": "remove", "value": {"app": ""}}]},
        {"/metadata": {"name": "web", "namespace": "default"}},
        id="labels remove on an object without labels adds nothing",
    ),
    pytest.param(
        deployment,
        {
            "annotationsOverrider": [
                {"operator": "add", "value": {"example.io/owner": "team-a"}},
                {"operator": "replace", "value": {"example.io/owner": "team-b"}},
            ]
        },
        {"/metadata/annotations": {"example.io/owner": "team-b"}},
        id="annotations entries apply in order and keys may hold slashes",
    ),
    pytest.param(
        config_map,
        {
            "fieldOverrider": [
                {
                    "fieldPath": "/data/config.yaml",
                    "yaml": [
                        {"subPath": "/server/port", "operator": "replace", "value": 9090},
                        {"subPath": "/server/hosts/-", "operator": "add", "value": "b.example"},
                    ],
                }
            ]
        },
        {"/data/config.yaml": "server:\n  hosts:\n  - a.example\n  - b.example\n  port: 9090\n"},
        id="field patches a YAML document held in a ConfigMap value",
    ),
    pytest.param(
        config_map,
        {
            "fieldOverrider": [
                {
                    "fieldPath": "/data/settings.json",
                    "json": [
                        {"subPath": "/log/format", "operator": "add", "value": "json"},
                        {"subPath": "/feature", "operator": "remove"},
                    ],
                }
            ]
        },
        {"/data/settings.json": '{"log":{"level":"info","format":"json"}}'},
        id="field patches a JSON document held in a ConfigMap value",
    ),
    pytest.param(
        config_map,
        {
            "fieldOverrider": [
                {
                    "fieldPath": "/data/config.yaml",
                    "yaml": [{"subPath": "/server/port", "operator": "replace", "value": 1}],
                    "json": [{"subPath": "/nope", "operator": "remove"}],
                }
            ]
        },
        {"/data/config.yaml": "server:\n  hosts:\n  - a.example\n  port: 1\n"},
        id="field with both yaml and json uses yaml, like Karmada",
    ),
    pytest.param(
        deployment,
        {
            "plaintext": [
                {"path": "/spec/replicas", "operator": "replace", "value": 5},
                {"path": f"{POD_SPEC}/nodeSelector", "operator": "add", "value": {"disk": "ssd"}},
                {"path": "/metadata/labels/app", "operator": "remove"},
            ]
        },
        {"/spec/replicas": 5, f"{POD_SPEC}/nodeSelector": {"disk": "ssd"}, "/metadata/labels": {}},
        id="plaintext replace add and remove",
    ),
    pytest.param(
        deployment,
        {
            "plaintext": [{"path": "/metadata/labels/app", "operator": "replace", "value": "last"}],
            "labelsOverrider": [{"operator": "replace", "value": {"app": "first"}}],
        },
        {"/metadata/labels/app": "last"},
        id="plaintext runs after the labels overrider",
    ),
]


@pytest.mark.parametrize(("make", "overriders", "expected"), CASES)
def test_overriders(
    make: Callable[[], dict[str, Any]], overriders: dict[str, Any], expected: dict[str, Any]
) -> None:
    obj = make()
    apply_overriders(obj, overriders)
    for pointer, value in expected.items():
        assert resolve_pointer(obj, pointer) == value, pointer


def test_command_remove_leaves_a_missing_command_missing() -> None:
    obj = deployment()
    apply_overriders(
        obj,
        {"commandOverrider": [{"containerName": "sidecar", "operator": "remove", "value": ["x"]}]},
    )
    assert "command" not in obj["spec"]["template"]["spec"]["containers"][1]


def test_field_yaml_result_is_valid_yaml() -> None:
    obj = config_map()
    patch = [{"subPath": "/server/name", "operator": "add", "value": "a: b"}]
    apply_overriders(obj, {"fieldOverrider": [{"fieldPath": "/data/config.yaml", "yaml": patch}]})
    assert yaml.safe_load(obj["data"]["config.yaml"]) == {
        "server": {"port": 8080, "hosts": ["a.example"], "name": "a: b"}
    }


ERRORS = [
    pytest.param(
        deployment,
        {
            "plaintext": [
                {"path": "/spec/replicas", "operator": "replace", "value": 1},
                {"path": "/spec/missing", "operator": "remove"},
            ]
        },
        "plaintext[1]",
        "no member 'missing'",
        id="plaintext remove of a missing path names the second entry",
    ),
    pytest.param(
        deployment,
        {"plaintext": [{"path": "/spec/paused", "operator": "replace", "value": True}]},
        "plaintext[0]",
        "no member 'paused'",
        id="plaintext replace of a missing path",
    ),
    pytest.param(
        deployment,
        {"plaintext": [{"path": "spec/replicas", "operator": "add", "value": 1}]},
        "plaintext[0]",
        "must start with '/'",
        id="plaintext with a malformed JSON pointer",
    ),
    pytest.param(
        deployment,
        {"plaintext": [{"path": "/spec/replicas", "operator": "copy", "value": 1}]},
        "plaintext[0]",
        "'copy' is not allowed",
        id="plaintext with an unknown operator",
    ),
    pytest.param(
        config_map,
        {
            "fieldOverrider": [
                {
                    "fieldPath": "/data/plain",
                    "yaml": [{"subPath": "/a", "operator": "add", "value": 1}],
                }
            ]
        },
        "fieldOverrider[0]",
        "does not hold valid YAML",
        id="field with invalid embedded YAML",
    ),
    pytest.param(
        config_map,
        {
            "fieldOverrider": [
                {
                    "fieldPath": "/data/config.yaml",
                    "json": [{"subPath": "/a", "operator": "add", "value": 1}],
                }
            ]
        },
        "fieldOverrider[0]",
        "does not hold valid JSON",
        id="field with invalid embedded JSON",
    ),
    pytest.param(
        config_map,
        {
            "fieldOverrider": [
                {"fieldPath": "/data", "yaml": [{"subPath": "/a", "operator": "add", "value": 1}]}
            ]
        },
        "fieldOverrider[0]",
        "/data is not a string",
        id="field path that does not hold a string",
    ),
    pytest.param(
        config_map,
        {"fieldOverrider": [{"fieldPath": "/data/absent", "yaml": []}]},
        "fieldOverrider[0]",
        "no member 'absent'",
        id="field path that does not exist",
    ),
    pytest.param(
        config_map,
        {
            "fieldOverrider": [
                {
                    "fieldPath": "/data/config.yaml",
                    "yaml": [{"subPath": "/server/missing/x", "operator": "add", "value": 1}],
                }
            ]
        },
        "fieldOverrider[0]",
        "no member 'missing'",
        id="field sub path whose parent is missing",
    ),
    pytest.param(
        config_map,
        {
            "imageOverrider": [
                {
                    "predicate": {"path": "/data/missing"},
                    "component": "Tag",
                    "operator": "replace",
                    "value": "v2",
                }
            ]
        },
        "imageOverrider[0]",
        "no member 'missing'",
        id="image predicate path that does not exist",
    ),
    pytest.param(
        config_map,
        {
            "imageOverrider": [
                {
                    "predicate": {"path": "/data/plain"},
                    "component": "Tag",
                    "operator": "replace",
                    "value": "v2",
                }
            ]
        },
        "imageOverrider[0]",
        "invalid image reference",
        id="image predicate path holding something that is not an image",
    ),
    pytest.param(
        deployment,
        {"labelsOverrider": [{"operator": "merge", "value": {"a": "b"}}]},
        "labelsOverrider[0]",
        "unsupported operator 'merge'",
        id="labels with an unknown operator",
    ),
]


@pytest.mark.parametrize(("make", "overriders", "entry", "reason"), ERRORS)
def test_overrider_errors(
    make: Callable[[], dict[str, Any]], overriders: dict[str, Any], entry: str, reason: str
) -> None:
    with pytest.raises(OverriderError, match=reason) as caught:
        apply_overriders(make(), overriders)
    assert caught.value.entry == entry


def test_command_with_an_unsupported_operator_fails() -> None:
    overriders = {
        "commandOverrider": [{"containerName": "nginx", "operator": "replace", "value": []}]
    }
    obj = deployment()
    before = copy.deepcopy(obj)
    with pytest.raises(OverriderError, match=r"commandOverrider\[0\]: unsupported operator"):
        apply_overriders(obj, overriders)
    assert obj == before
