"""The Karmada CRDs (deploy/crds) on the real kube-apiserver: discovery, real manifests, validation.

Every manifest under tests/data/karmada (Karmada's samples and docs examples, the demo, and
complete objects of every kind) must be accepted unchanged: what is read back carries everything
that was sent, plus nothing but the server defaults Karmada declares. Every manifest under
tests/data/karmada/invalid must be refused with 422 and a message that names the field and the
problem.
"""

from __future__ import annotations

import copy
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import pytest_asyncio
import yaml

from controllers.api import KARMADA_RESOURCES, crd_paths
from reconcile import CONDITION_MESSAGE_LIMIT, GVK, TRUNCATED_MARKER, set_condition
from testenv import ControlPlane, RequestError

pytestmark = pytest.mark.asyncio(loop_scope="session")

DATA = Path(__file__).parents[1] / "data" / "karmada"
INVALID = DATA / "invalid"

POLICY, WORK, CLUSTER, CONFIG = (
    "policy.karmada.io",
    "work.karmada.io",
    "cluster.karmada.io",
    "config.karmada.io",
)


class Served(NamedTuple):
    """How the apiserver must serve one Karmada kind."""

    group: str
    version: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...]
    status: bool
    category: bool = True
    """In the ``karmada-io`` category (Karmada's WorkloadRebalancer is not)."""


KINDS: dict[str, Served] = {
    "PropagationPolicy": Served(POLICY, "v1alpha1", "propagationpolicies", True, ("pp",), False),
    "ClusterPropagationPolicy": Served(
        POLICY, "v1alpha1", "clusterpropagationpolicies", False, ("cpp",), False
    ),
    "OverridePolicy": Served(POLICY, "v1alpha1", "overridepolicies", True, ("op",), False),
    "ClusterOverridePolicy": Served(
        POLICY, "v1alpha1", "clusteroverridepolicies", False, ("cop",), False
    ),
    "ResourceBinding": Served(WORK, "v1alpha2", "resourcebindings", True, ("rb",), True),
    "ClusterResourceBinding": Served(
        WORK, "v1alpha2", "clusterresourcebindings", False, ("crb",), True
    ),
    "Work": Served(WORK, "v1alpha1", "works", True, ("wk",), True),
    "Cluster": Served(CLUSTER, "v1alpha1", "clusters", False, (), True),
    "ResourceInterpreterCustomization": Served(
        CONFIG, "v1alpha1", "resourceinterpretercustomizations", False, ("ric",), False
    ),
    "ResourceInterpreterWebhookConfiguration": Served(
        CONFIG, "v1alpha1", "resourceinterpreterwebhookconfigurations", False, (), False
    ),
    "ClusterTaintPolicy": Served(POLICY, "v1alpha1", "clustertaintpolicies", False, (), False),
    "WorkloadRebalancer": Served(
        "apps.karmada.io", "v1alpha1", "workloadrebalancers", False, (), True, category=False
    ),
}

# Fields the apiserver may add to a manifest: Karmada's declared defaults ("*" is any list index).
SERVER_DEFAULTS = {
    "spec.priority",
    "spec.preemption",
    "spec.conflictResolution",
    "spec.schedulerName",
    "spec.placement.replicaScheduling.replicaSchedulingType",
    "spec.failover.application.purgeMode",
    "spec.failover.application.decisionConditions.tolerationSeconds",
    "spec.failover.cluster.purgeMode",
    "spec.schedulePriority.priority",
    "spec.syncMode",
    "webhooks[*].timeoutSeconds",
    "webhooks[*].clientConfig.service.port",
}

# invalid/<file> -> fragments its 422 message must contain.
INVALID_MESSAGES: dict[str, list[str]] = {
    "spread-maxgroups-below-mingroups.yaml": [
        "spec.placement.spreadConstraints[0]",
        "maxGroups must be greater than or equal to minGroups",
    ],
    "clusteraffinity-with-clusteraffinities.yaml": [
        "spec.placement.clusterAffinities",
        "clusterAffinity and clusterAffinities can not co-exist",
    ],
    "replicascheduling-unknown-type.yaml": [
        "spec.placement.replicaScheduling.replicaSchedulingType",
        'Unsupported value: "Split"',
        '"Duplicated", "Divided"',
    ],
    "resourceselector-missing-kind.yaml": ["spec.resourceSelectors[0].kind", "Required value"],
    "resourceselectors-empty.yaml": ["spec.resourceSelectors", "at least 1 item"],
    "fieldselector-unknown-key.yaml": [
        "spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].key",
        'Unsupported value: "name"',
        '"provider", "region", "zone"',
    ],
    "fieldselector-exists-operator.yaml": [
        "spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].operator",
        'Unsupported value: "Exists"',
        '"In", "NotIn"',
    ],
    "staticweight-zero.yaml": [
        "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight",
        "greater than or equal to 1",
    ],
    "spread-region-without-cluster.yaml": [
        "spec.placement.spreadConstraints",
        "spreadByField: cluster is required",
    ],
    "spread-field-and-label.yaml": [
        "spec.placement.spreadConstraints[0]",
        "spreadByField and spreadByLabel can not co-exist",
    ],
    "unknown-conflictresolution.yaml": [
        "spec.conflictResolution",
        'Unsupported value: "Replace"',
        '"Abort", "Overwrite"',
    ],
    "imageoverrider-unknown-component.yaml": [
        "spec.overrideRules[0].overriders.imageOverrider[0].component",
        'Unsupported value: "Digest"',
        '"Registry", "Repository", "Tag"',
    ],
    "imageoverrider-replace-without-value.yaml": [
        "spec.overrideRules[0].overriders.imageOverrider[0].value",
        "value must not be empty when operator is add or replace",
    ],
    "plaintext-unknown-operator.yaml": [
        "spec.overrideRules[0].overriders.plaintext[0].operator",
        'Unsupported value: "patch"',
    ],
    "cluster-unknown-syncmode.yaml": [
        "spec.syncMode",
        'Unsupported value: "Poll"',
        '"Push", "Pull"',
    ],
    "webhook-without-endpoint.yaml": [
        "webhooks[0].clientConfig",
        "clientConfig must specify url or service",
    ],
    "fieldselector-in-without-values.yaml": [
        "spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].values",
        "values must be non-empty for the In and NotIn operators",
    ],
    "clusteraffinities-duplicate-name.yaml": [
        "spec.placement.clusterAffinities[1]",
        'Duplicate value: {"affinityName":"primary"}',
    ],
    "suspension-all-and-some-clusters.yaml": [
        "spec.suspension",
        "dispatching can not co-exist with dispatchingOnClusters",
    ],
    "overriderules-with-deprecated-overriders.yaml": [
        "overrideRules can not co-exist with the deprecated targetCluster and overriders",
    ],
    "fieldoverrider-json-and-yaml.yaml": [
        "spec.overrideRules[0].overriders.fieldOverrider[0]",
        "json and yaml can not co-exist in one fieldOverrider",
    ],
    "cluster-name-too-long.yaml": ["cluster name must be no more than 48 characters"],
}


def _documents(root: Path, *, skip: Path | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(root.rglob("*.yaml")):
        if skip is not None and skip in path.parents:
            continue
        for index, document in enumerate(yaml.safe_load_all(path.read_text())):
            if document:
                relative = path.relative_to(root)
                yield (
                    f"{relative}#{index}:{document['kind']}/{document['metadata']['name']}",
                    document,
                )


SAMPLES = list(_documents(DATA, skip=INVALID))


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def karmada(host: ControlPlane) -> ControlPlane:
    """The host control plane with the Karmada CRDs installed (once per session)."""
    await host.install_crds(crd_paths())
    return host


_DISCOVERED: dict[str, list[dict[str, Any]]] = {}


async def _served(host: ControlPlane, api_version: str) -> list[dict[str, Any]]:
    if api_version not in _DISCOVERED:
        root = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        _DISCOVERED[api_version] = (await host.request("GET", root))["resources"]
    return _DISCOVERED[api_version]


async def _collection(host: ControlPlane, obj: dict[str, Any], namespace: str) -> str:
    """The REST path of the collection ``obj`` belongs to, found through discovery."""
    api_version = obj["apiVersion"]
    for resource in await _served(host, api_version):
        if resource["kind"] == obj["kind"] and "/" not in resource["name"]:
            root = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
            scope = f"/namespaces/{namespace}" if resource["namespaced"] else ""
            return f"{root}{scope}/{resource['name']}"
    raise AssertionError(f"{api_version} {obj['kind']} is not served")


def _placed(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """A copy of ``obj`` for this test: in ``namespace`` if namespaced, else with a unique name."""
    body = copy.deepcopy(obj)
    body.pop("status", None)
    metadata = body["metadata"]
    namespaced = KINDS[body["kind"]].namespaced if body["kind"] in KINDS else True
    if namespaced:
        metadata["namespace"] = namespace
    else:
        metadata.pop("namespace", None)
        metadata["name"] = f"{metadata['name']}-{secrets.token_hex(3)}"
    return body


async def _create(host: ControlPlane, obj: dict[str, Any], namespace: str) -> tuple[str, Any]:
    body = _placed(obj, namespace)
    collection = await _collection(host, body, namespace)
    await host.request("POST", collection, body)
    path = f"{collection}/{body['metadata']['name']}"
    return path, await host.request("GET", path)


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """All but type, metadata and status: the spec (the webhooks of webhook configurations)."""
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}


def _differences(sent: Any, got: Any, path: str = "") -> tuple[list[str], list[str]]:
    """(fields sent but lost or changed, fields the server added), as dotted paths."""
    if isinstance(sent, dict) and isinstance(got, dict):
        lost: list[str] = []
        added: list[str] = []
        for key in sent.keys() | got.keys():
            child = f"{path}.{key}" if path else key
            if key not in got:
                lost.append(child)
            elif key not in sent:
                added.append(child)
            else:
                more_lost, more_added = _differences(sent[key], got[key], child)
                lost += more_lost
                added += more_added
        return lost, added
    if isinstance(sent, list) and isinstance(got, list) and len(sent) == len(got):
        lost, added = [], []
        for index, (a, b) in enumerate(zip(sent, got, strict=True)):
            more_lost, more_added = _differences(a, b, f"{path}[{index}]")
            lost += more_lost
            added += more_added
        return lost, added
    return ([] if sent == got else [f"{path}: sent {sent!r}, read back {got!r}"]), []


def _generic(path: str) -> str:
    return re.sub(r"\[\d+\]", "[*]", path)


async def test_discovery_serves_every_kind_with_its_scope_and_short_names(
    karmada: ControlPlane,
) -> None:
    for kind, want in KINDS.items():
        served = {r["name"]: r for r in await _served(karmada, f"{want.group}/{want.version}")}
        resource = served[want.plural]
        assert resource["kind"] == kind
        assert resource["namespaced"] is want.namespaced, kind
        assert tuple(resource.get("shortNames", ())) == want.short_names, kind
        assert ("karmada-io" in resource.get("categories", [])) is want.category, kind
        assert (f"{want.plural}/status" in served) is want.status, kind
    # The library's Resource table describes the same kinds the apiserver serves.
    library = {
        (r.gvk, r.plural, r.namespaced, "status" in r.subresources) for r in KARMADA_RESOURCES
    }
    expected = {
        (GVK(k.group, k.version, kind), k.plural, k.namespaced, k.status)
        for kind, k in KINDS.items()
    }
    assert library == expected


@pytest.mark.parametrize(("source", "manifest"), SAMPLES, ids=[s for s, _ in SAMPLES])
async def test_manifest_is_accepted_unchanged(
    karmada: ControlPlane, namespace: str, source: str, manifest: dict[str, Any]
) -> None:
    path, stored = await _create(karmada, manifest, namespace)
    lost, added = _differences(_content(manifest), _content(stored))
    assert lost == [], f"{source}: the apiserver dropped or changed fields"
    if manifest["kind"] in KINDS:  # built-in kinds (the samples' Deployments) get many defaults
        unexpected = sorted(p for p in added if _generic(p) not in SERVER_DEFAULTS)
        assert unexpected == [], f"{source}: fields added that are no Karmada default"

    status = manifest.get("status")
    if status is not None and manifest["kind"] in KINDS:
        assert "status" not in stored or stored["status"] != status, "status set through create"
        written = await karmada.request("PUT", f"{path}/status", {**stored, "status": status})
        assert written["status"] == status
        assert (await karmada.request("GET", path))["status"] == status


@pytest.mark.parametrize("filename", sorted(INVALID_MESSAGES))
async def test_invalid_manifest_is_rejected_with_a_message_naming_the_problem(
    karmada: ControlPlane, namespace: str, filename: str
) -> None:
    manifest = yaml.safe_load((INVALID / filename).read_text())
    body = _placed(manifest, namespace)
    with pytest.raises(RequestError) as caught:
        await karmada.request("POST", await _collection(karmada, body, namespace), body)
    assert caught.value.status == 422
    assert caught.value.body["reason"] == "Invalid"
    message = caught.value.body["message"]
    for fragment in INVALID_MESSAGES[filename]:
        assert fragment in message, f"{fragment!r} not in {message!r}"


async def test_every_invalid_manifest_has_an_expected_message() -> None:
    assert sorted(p.name for p in INVALID.glob("*.yaml")) == sorted(INVALID_MESSAGES)


async def test_defaults_are_applied(karmada: ControlPlane, namespace: str) -> None:
    selector = [{"apiVersion": "apps/v1", "kind": "Deployment"}]
    policy = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "defaults"},
        "spec": {
            "resourceSelectors": selector,
            "placement": {"replicaScheduling": {}},
            "failover": {"application": {"decisionConditions": {}}, "cluster": {}},
        },
    }
    _, stored = await _create(karmada, policy, namespace)
    spec = stored["spec"]
    assert spec["priority"] == 0
    assert spec["preemption"] == "Never"
    assert spec["conflictResolution"] == "Abort"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["placement"]["replicaScheduling"] == {"replicaSchedulingType": "Divided"}
    assert spec["failover"]["application"] == {
        "decisionConditions": {"tolerationSeconds": 300},
        "purgeMode": "Graciously",
    }
    assert spec["failover"]["cluster"] == {"purgeMode": "Gracefully"}

    binding = {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "defaults"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"},
            "schedulePriority": {},
        },
    }
    _, stored = await _create(karmada, binding, namespace)
    assert stored["spec"]["conflictResolution"] == "Abort"
    assert stored["spec"]["schedulePriority"] == {"priority": 0}

    cluster = {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "defaults"},
        "spec": {"apiEndpoint": "https://127.0.0.1:6443"},
    }
    _, stored = await _create(karmada, cluster, namespace)
    assert stored["spec"]["syncMode"] == "Push"

    webhooks = {
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterWebhookConfiguration",
        "metadata": {"name": "defaults"},
        "webhooks": [
            {
                "name": "a.example.com",
                "clientConfig": {"service": {"namespace": "karmada-system", "name": "a"}},
                "interpreterContextVersions": ["v1alpha1"],
            }
        ],
    }
    _, stored = await _create(karmada, webhooks, namespace)
    assert stored["webhooks"][0]["timeoutSeconds"] == 10
    assert stored["webhooks"][0]["clientConfig"]["service"]["port"] == 443


async def test_unknown_fields_are_pruned(karmada: ControlPlane, namespace: str) -> None:
    policy = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "pruned"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "names": ["old"]}],
            "resourceSelector": [{"apiVersion": "v1", "kind": "ConfigMap"}],
            "placement": {"clusterTolerations": [{"key": "k", "Effect": "NoSchedule"}]},
        },
    }
    _, stored = await _create(karmada, policy, namespace)
    assert "resourceSelector" not in stored["spec"]
    assert stored["spec"]["resourceSelectors"] == [{"apiVersion": "v1", "kind": "ConfigMap"}]
    assert stored["spec"]["placement"]["clusterTolerations"] == [{"key": "k"}]


async def test_status_is_written_only_through_the_status_subresource(
    karmada: ControlPlane, namespace: str
) -> None:
    binding = {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "nginx-deployment"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}},
        "status": {"schedulerObservedGeneration": 7},
    }
    path, created = await _create(karmada, {**binding}, namespace)
    assert "status" not in created
    created["spec"]["clusters"] = [{"name": "member1", "replicas": 1}]
    created["status"] = {
        "schedulerObservedGeneration": 1,
        "aggregatedStatus": [{"clusterName": "member1", "status": {"any": {"shape": [1, "x"]}}}],
    }
    updated = await karmada.request("PUT", f"{path}/status", created)
    assert updated["status"] == created["status"]
    assert "clusters" not in updated["spec"], "spec changed through /status"
    assert updated["metadata"]["generation"] == 1


@pytest.mark.parametrize(
    ("resource", "source", "columns"),
    [
        ("pp", "demo/propagationpolicy.yaml", ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"]),
        (
            "cpp",
            "full/clusterpropagationpolicy.yaml",
            ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"],
        ),
        ("op", "samples/nginx/overridepolicy.yaml", ["NAME", "AGE"]),
        ("cop", "full/clusteroverridepolicy.yaml", ["NAME", "AGE"]),
        ("rb", "full/resourcebinding.yaml", ["NAME", "SCHEDULED", "FULLYAPPLIED", "AGE"]),
        ("crb", "full/clusterresourcebinding.yaml", ["NAME", "SCHEDULED", "FULLYAPPLIED", "AGE"]),
        ("wk", "full/work.yaml", ["NAME", "WORKLOAD-KIND", "APPLIED", "AGE"]),
        (
            "clusters.cluster.karmada.io",
            "full/cluster.yaml",
            ["NAME", "VERSION", "MODE", "READY", "AGE"],
        ),
        (
            "ric",
            "full/resourceinterpretercustomization.yaml",
            ["NAME", "TARGET-API-VERSION", "TARGET-KIND", "AGE"],
        ),
        (
            "resourceinterpreterwebhookconfigurations",
            "full/resourceinterpreterwebhookconfiguration.yaml",
            ["NAME", "AGE"],
        ),
    ],
)
async def test_kubectl_lists_each_kind_by_short_name_with_karmadas_columns(
    karmada: ControlPlane, namespace: str, resource: str, source: str, columns: list[str]
) -> None:
    manifest = yaml.safe_load((DATA / source).read_text())
    path, stored = await _create(karmada, manifest, namespace)
    if "status" in manifest:
        await karmada.request("PUT", f"{path}/status", {**stored, "status": manifest["status"]})
    name = stored["metadata"]["name"]
    listed = await karmada.kubectl("get", resource, name, "-n", namespace)
    header, row = listed.stdout.decode().splitlines()
    assert header.split() == columns
    assert row.split()[0] == name
    if resource == "wk":
        assert row.split()[1:3] == ["Deployment", "True"]
    if resource == "rb":
        assert row.split()[1:3] == ["True", "True"]
    if resource == "clusters.cluster.karmada.io":
        assert row.split()[1:4] == ["v1.37.2", "Push", "True"]


async def test_kubectl_applies_the_crds_and_karmadas_nginx_sample_unchanged(
    karmada: ControlPlane, namespace: str
) -> None:
    crds = await karmada.kubectl("apply", "--dry-run=server", "-f", str(crd_paths()[0].parent))
    assert crds.stdout.decode().count("customresourcedefinition.apiextensions.k8s.io/") == 12
    sample = DATA / "samples" / "nginx"
    applied = await karmada.kubectl("apply", "-n", namespace, "-f", str(sample))
    assert sorted(applied.stdout.decode().split("\n")[:-1]) == [
        "deployment.apps/nginx created",
        "overridepolicy.policy.karmada.io/nginx-op created",
        "propagationpolicy.policy.karmada.io/nginx-propagation created",
    ]
    listed = await karmada.kubectl("get", "pp,op", "-n", namespace, "-o", "name")
    assert listed.stdout.decode().split() == [
        "propagationpolicy.policy.karmada.io/nginx-propagation",
        "overridepolicy.policy.karmada.io/nginx-op",
    ]


async def test_a_condition_with_a_huge_message_is_still_written(
    karmada: ControlPlane, namespace: str
) -> None:
    # The CRDs cap condition messages at 32,768 characters; set_condition keeps under the cap, so
    # a long interpreter error cannot make a status write fail (and retry) forever.
    work = {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": "huge-message"},
        "spec": {"workload": {"manifests": []}},
    }
    path, created = await _create(karmada, work, namespace)
    set_condition(created, "Applied", False, "AppliedFailed", "é" * 100_000)
    updated = await karmada.request("PUT", f"{path}/status", created)
    message = updated["status"]["conditions"][0]["message"]
    assert len(message) == CONDITION_MESSAGE_LIMIT
    assert message.endswith(TRUNCATED_MARKER)
