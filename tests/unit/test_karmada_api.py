"""controllers.api: the Karmada kinds' GVKs, typed accessors, well-known names and CRD files."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import controllers.api as api
from controllers.api import names, target_clusters
from reconcile import GVK

DATA = Path(__file__).parents[1] / "data" / "karmada"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load(relative: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((DATA / relative).read_text())
    return document


@functools.cache
def _crds() -> dict[str, dict[str, Any]]:
    """The shipped CRDs by kind (parsed once: they are large)."""
    crds: dict[str, dict[str, Any]] = {}
    for path in api.crd_paths():
        documents = [d for d in yaml.load_all(path.read_text(), Loader=_LOADER) if d]
        assert len(documents) == 1, f"{path.name}: one CRD per file"
        crds[documents[0]["spec"]["names"]["kind"]] = documents[0]
    return crds


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _strip(schema: Any, keys: set[str]) -> Any:
    if isinstance(schema, dict):
        return {k: _strip(v, keys) for k, v in schema.items() if k not in keys}
    if isinstance(schema, list):
        return [_strip(v, keys) for v in schema]
    return schema


def _walk(schema: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    nodes = [(path, schema)]
    for name, child in schema.get("properties", {}).items():
        nodes += _walk(child, f"{path}.{name}" if path else name)
    if isinstance(schema.get("items"), dict):
        nodes += _walk(schema["items"], f"{path}[*]")
    if isinstance(schema.get("additionalProperties"), dict):
        nodes += _walk(schema["additionalProperties"], f"{path}{{*}}")
    return nodes


# --- exports ---------------------------------------------------------------------------------


def test_package_reexports_every_module_name_sorted() -> None:
    assert list(api.__all__) == sorted(api.__all__)
    exported: set[str] = set()
    for info in pkgutil.iter_modules(api.__path__):
        module = importlib.import_module(f"controllers.api.{info.name}")
        assert module.__doc__, f"{module.__name__} has no docstring"
        assert list(module.__all__) == sorted(module.__all__), module.__name__
        for name in module.__all__:
            assert getattr(api, name) is getattr(module, name), name
        exported |= set(module.__all__)
    assert set(api.__all__) == exported


@pytest.mark.parametrize(
    ("gvk", "api_version", "kind"),
    [
        (api.PROPAGATION_POLICY_GVK, "policy.karmada.io/v1alpha1", "PropagationPolicy"),
        (
            api.CLUSTER_PROPAGATION_POLICY_GVK,
            "policy.karmada.io/v1alpha1",
            "ClusterPropagationPolicy",
        ),
        (api.OVERRIDE_POLICY_GVK, "policy.karmada.io/v1alpha1", "OverridePolicy"),
        (api.CLUSTER_OVERRIDE_POLICY_GVK, "policy.karmada.io/v1alpha1", "ClusterOverridePolicy"),
        (api.RESOURCE_BINDING_GVK, "work.karmada.io/v1alpha2", "ResourceBinding"),
        (api.CLUSTER_RESOURCE_BINDING_GVK, "work.karmada.io/v1alpha2", "ClusterResourceBinding"),
        (api.WORK_GVK, "work.karmada.io/v1alpha1", "Work"),
        (api.CLUSTER_GVK, "cluster.karmada.io/v1alpha1", "Cluster"),
        (
            api.RESOURCE_INTERPRETER_CUSTOMIZATION_GVK,
            "config.karmada.io/v1alpha1",
            "ResourceInterpreterCustomization",
        ),
        (
            api.RESOURCE_INTERPRETER_WEBHOOK_CONFIGURATION_GVK,
            "config.karmada.io/v1alpha1",
            "ResourceInterpreterWebhookConfiguration",
        ),
        (api.WORKLOAD_REBALANCER_GVK, "apps.karmada.io/v1alpha1", "WorkloadRebalancer"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_gvks_match_karmadas_api_versions(gvk: GVK, api_version: str, kind: str) -> None:
    assert (gvk.api_version, gvk.kind) == (api_version, kind)


def test_resource_paths_follow_scope() -> None:
    assert api.RESOURCE_BINDINGS.path("default", "nginx-deployment") == (
        "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings/nginx-deployment"
    )
    assert api.CLUSTERS.path("ignored", "member1") == (
        "/apis/cluster.karmada.io/v1alpha1/clusters/member1"
    )


# --- policy accessors ------------------------------------------------------------------------


def test_propagation_spec_reads_the_policy_spec() -> None:
    policy = _load("demo/propagationpolicy.yaml")
    spec = api.propagation_spec(policy)
    assert spec["resourceSelectors"] == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}
    ]
    weights = spec["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"]
    assert [(w["targetCluster"]["clusterNames"], w["weight"]) for w in weights] == [
        (["member1"], 2),
        (["member2"], 1),
    ]
    assert api.propagation_spec({}) == {}


def test_policy_defaults_when_fields_are_absent() -> None:
    spec = api.propagation_spec({"spec": {"resourceSelectors": []}})
    assert api.priority_of(spec) == 0
    assert api.preemption_of(spec) == "Never"
    assert api.conflict_resolution_of(spec) == "Abort"
    full = api.propagation_spec(_load("full/propagationpolicy.yaml"))
    assert api.priority_of(full) == 10
    assert api.preemption_of(full) == "Always"
    assert api.conflict_resolution_of(full) == "Overwrite"
    assert api.conflict_resolution_of(api.binding_spec(_load("full/resourcebinding.yaml"))) == (
        "Abort"
    )


@pytest.mark.parametrize(
    ("placement", "scheduling_type", "preference"),
    [
        pytest.param(None, "Duplicated", None, id="no placement is Duplicated"),
        pytest.param({}, "Duplicated", None, id="no replicaScheduling is Duplicated"),
        pytest.param({"replicaScheduling": {}}, "Divided", "Weighted", id="no type is Divided"),
        pytest.param(
            {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
            "Duplicated",
            None,
            id="Duplicated has no preference",
        ),
        pytest.param(
            {"replicaScheduling": {"replicaSchedulingType": "Divided"}},
            "Divided",
            "Weighted",
            id="Divided without preference is Weighted",
        ),
        pytest.param(
            {
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Aggregated",
                }
            },
            "Divided",
            "Aggregated",
            id="Aggregated",
        ),
    ],
)
def test_replica_scheduling_follows_karmadas_defaults(
    placement: api.Placement | None, scheduling_type: str, preference: str | None
) -> None:
    assert api.replica_scheduling_type_of(placement) == scheduling_type
    assert api.division_preference_of(placement) == preference


def test_override_spec_reads_rules_and_overriders() -> None:
    spec = api.override_spec(_load("full/clusteroverridepolicy.yaml"))
    rule = spec["overrideRules"][0]
    assert rule["targetCluster"]["clusterNames"] == ["member1"]
    overriders = rule["overriders"]
    assert [o["component"] for o in overriders["imageOverrider"]] == ["Registry", "Tag"]
    assert overriders["plaintext"][1] == {
        "path": "/metadata/annotations/note",
        "operator": "add",
        "value": "overridden",
    }
    assert overriders["fieldOverrider"][0]["json"][1]["value"] == {"cache": True, "replicas": 3}
    assert api.override_spec({"spec": None}) == {}


# --- work accessors --------------------------------------------------------------------------


def test_binding_accessors_read_spec_and_status() -> None:
    binding = _load("full/resourcebinding.yaml")
    spec = api.binding_spec(binding)
    assert spec["resource"]["name"] == "nginx"
    assert spec["replicas"] == 3
    assert spec["replicaRequirements"]["resourceRequest"] == {"cpu": "100m", "memory": "128Mi"}
    assert api.target_clusters(binding) == [
        {"name": "member1", "replicas": 2},
        {"name": "member2", "replicas": 1},
    ]
    status = api.binding_status(binding)
    assert [c["type"] for c in status["conditions"]] == [
        api.SCHEDULED_CONDITION,
        api.FULLY_APPLIED_CONDITION,
    ]
    assert [(i["clusterName"], i.get("applied")) for i in status["aggregatedStatus"]] == [
        ("member1", True),
        ("member2", False),
    ]
    unscheduled = {"spec": {"resource": spec["resource"]}}
    assert api.target_clusters(unscheduled) == []
    assert api.binding_status(unscheduled) == {}


def test_work_accessors_read_manifests_and_statuses() -> None:
    work = _load("full/work.yaml")
    (manifest,) = api.manifests_of(work)
    assert GVK.of(manifest) == GVK("apps", "v1", "Deployment")
    assert api.work_spec(work)["suspendDispatching"] is False
    (status,) = api.work_status(work)["manifestStatuses"]
    assert status["identifier"]["ordinal"] == 0
    assert status["health"] == "Healthy"
    assert api.manifests_of({"spec": {}}) == []
    assert api.work_status({}) == {}


# --- cluster and config accessors ------------------------------------------------------------


def test_cluster_accessors_and_readiness() -> None:
    cluster = _load("full/cluster.yaml")
    spec = api.cluster_spec(cluster)
    assert spec["syncMode"] == "Push"
    assert spec["secretRef"] == {"namespace": "karmada-cluster", "name": "member1"}
    assert [t["effect"] for t in spec["taints"]] == ["NoSchedule", "NoExecute"]
    status = api.cluster_status(cluster)
    assert status["resourceSummary"]["allocatable"]["cpu"] == "12"
    assert api.is_cluster_ready(cluster)
    assert not api.is_cluster_ready({"spec": spec})
    not_ready = {
        "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "X"}]},
    }
    assert not api.is_cluster_ready(not_ready)


def test_customization_target_and_rules() -> None:
    customization = _load("full/resourceinterpretercustomization.yaml")
    assert api.customization_target(customization) == GVK(
        "workload.example.io", "v1alpha1", "Workload"
    )
    rules = api.customization_spec(customization)["customizations"]
    assert "function GetComponents(obj)" in rules["componentResource"]["luaScript"]
    with pytest.raises(ValueError, match=r"spec\.target"):
        api.customization_target({"spec": {"target": {"kind": "Workload"}}})


def test_webhooks_of_lists_the_webhooks() -> None:
    configuration = _load("full/resourceinterpreterwebhookconfiguration.yaml")
    first, second = api.webhooks_of(configuration)
    assert first["clientConfig"]["service"]["port"] == 8443
    assert second["clientConfig"]["url"].startswith("https://")
    assert api.webhooks_of({}) == []


# --- names -----------------------------------------------------------------------------------


def test_well_known_names_are_karmadas() -> None:
    assert (
        names.PROPAGATION_POLICY_PERMANENT_ID_LABEL == "propagationpolicy.karmada.io/permanent-id"
    )
    assert names.MANAGED_LABEL == "karmada.io/managed"
    assert names.WORK_NAME_ANNOTATION == "work.karmada.io/name"
    assert names.EXECUTION_CONTROLLER_FINALIZER == "karmada.io/execution-controller"
    assert names.CONFLICT_RESOLUTION_ANNOTATION == "work.karmada.io/conflict-resolution"


def test_execution_namespace_round_trips() -> None:
    assert names.execution_namespace("member1") == "karmada-es-member1"
    assert names.cluster_of_execution_namespace("karmada-es-member1") == "member1"
    assert names.cluster_of_execution_namespace("karmada-es-") is None
    assert names.cluster_of_execution_namespace("default") is None


@pytest.mark.parametrize(
    ("namespace", "reserved"),
    [
        ("karmada-system", True),
        ("karmada-cluster", True),
        ("karmada-es-member1", True),
        ("kube-system", True),
        ("kube-public", True),
        ("default", False),
        ("karmada-demo", False),
    ],
)
def test_reserved_namespaces(namespace: str, reserved: bool) -> None:
    assert names.is_reserved_namespace(namespace) is reserved


# --- the CRD files ---------------------------------------------------------------------------


def test_crd_paths_lists_one_file_per_kind() -> None:
    paths = api.crd_paths()
    assert paths == sorted(paths)
    assert all(p.parent == api.CRD_DIRECTORY for p in paths)
    assert len(paths) == len(api.KARMADA_RESOURCES) == 12


@pytest.mark.parametrize("resource", api.KARMADA_RESOURCES, ids=lambda r: r.gvk.kind)
def test_crd_matches_the_library_resource(resource: Any) -> None:
    crd = _crds()[resource.gvk.kind]
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{resource.plural}.{resource.gvk.group}"
    assert spec["group"] == resource.gvk.group
    assert spec["names"]["plural"] == resource.plural
    assert spec["scope"] == ("Namespaced" if resource.namespaced else "Cluster")
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == (
        resource.gvk.version,
        True,
        True,
    )
    assert ("status" in version.get("subresources", {})) == ("status" in resource.subresources)
    assert ("status" in _schema(crd)["properties"]) == ("status" in resource.subresources)


@pytest.mark.parametrize(
    ("namespaced", "cluster_wide"),
    [
        ("PropagationPolicy", "ClusterPropagationPolicy"),
        ("OverridePolicy", "ClusterOverridePolicy"),
        ("ResourceBinding", "ClusterResourceBinding"),
    ],
)
def test_namespaced_and_cluster_kinds_share_one_schema(namespaced: str, cluster_wide: str) -> None:
    crds = _crds()
    assert _strip(_schema(crds[namespaced]), {"description"}) == _strip(
        _schema(crds[cluster_wide]), {"description"}
    )
    columns = [v.get("additionalPrinterColumns") for v in crds[namespaced]["spec"]["versions"]]
    assert columns == [
        v.get("additionalPrinterColumns") for v in crds[cluster_wide]["spec"]["versions"]
    ]


def test_binding_placement_is_the_policy_placement_without_validation() -> None:
    crds = _crds()
    policy = _schema(crds["PropagationPolicy"])["properties"]["spec"]["properties"]["placement"]
    binding = _schema(crds["ResourceBinding"])["properties"]["spec"]["properties"]["placement"]
    assert "x-kubernetes-validations" in policy
    assert not any("x-kubernetes-validations" in node for _, node in _walk(binding))
    # Same fields everywhere; only the policy validates them.
    assert [p for p, _ in _walk(binding)] == [p for p, _ in _walk(policy)]


def test_unknown_fields_are_preserved_only_where_karmada_embeds_arbitrary_objects() -> None:
    preserved = {
        (kind, path)
        for kind, crd in _crds().items()
        for path, node in _walk(_schema(crd))
        if node.get("x-kubernetes-preserve-unknown-fields")
    }
    plaintext = "spec.{0}overriders.plaintext[*].value"
    field = "spec.{0}overriders.fieldOverrider[*].{1}[*].value"
    overrides = {
        template.format(prefix, form)
        for template in (plaintext, field)
        for prefix in ("", "overrideRules[*].")
        for form in ("json", "yaml")
    }
    expected = {
        (kind, path) for kind in ("OverridePolicy", "ClusterOverridePolicy") for path in overrides
    }
    expected |= {
        (kind, "status.aggregatedStatus[*].status")
        for kind in ("ResourceBinding", "ClusterResourceBinding")
    }
    expected |= {
        ("Work", "spec.workload.manifests[*]"),
        ("Work", "status.manifestStatuses[*].status"),
    }
    assert preserved == expected


def test_every_schema_node_is_structural() -> None:
    for kind, crd in _crds().items():
        for path, node in _walk(_schema(crd)):
            preserved_any = node.get("x-kubernetes-preserve-unknown-fields") and "type" not in node
            int_or_string = node.get("x-kubernetes-int-or-string")
            assert "type" in node or preserved_any or int_or_string, f"{kind} {path}: no type"
            if "properties" in node:
                assert node["type"] == "object", f"{kind} {path}"


@pytest.mark.parametrize(
    ("kind", "path", "default"),
    [
        ("PropagationPolicy", "spec.priority", 0),
        ("PropagationPolicy", "spec.preemption", "Never"),
        ("PropagationPolicy", "spec.conflictResolution", "Abort"),
        ("PropagationPolicy", "spec.schedulerName", "default-scheduler"),
        ("PropagationPolicy", "spec.placement.replicaScheduling.replicaSchedulingType", "Divided"),
        ("ResourceBinding", "spec.conflictResolution", "Abort"),
        ("Cluster", "spec.syncMode", "Push"),
        ("ResourceInterpreterWebhookConfiguration", "webhooks[*].timeoutSeconds", 10),
    ],
)
def test_crd_declares_karmadas_defaults(kind: str, path: str, default: object) -> None:
    nodes = dict(_walk(_schema(_crds()[kind])))
    assert nodes[path]["default"] == default


def test_a_cluster_listed_twice_in_a_binding_is_targeted_once() -> None:
    # Each target becomes one Work: a duplicate would build and write the same Work twice.
    binding = {
        "spec": {
            "clusters": [
                {"name": "member1", "replicas": 2},
                {"name": "member2", "replicas": 1},
                {"name": "member1", "replicas": 5},
            ]
        }
    }
    assert target_clusters(binding) == [
        {"name": "member1", "replicas": 2},
        {"name": "member2", "replicas": 1},
    ]
