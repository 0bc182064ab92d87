"""The controller-manager's ring: one key for a template, its binding and its Works."""

from __future__ import annotations

from pathlib import Path

import pytest

from controllers import cli
from controllers.api import (
    CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
)
from controllers.binding import binding_name
from controllers.controllermanager import build
from controllers.manageroptions import WebhookServerOptions
from controllers.sharding import (
    LEADER_WEIGHT,
    ShardingOptions,
    binding_key,
    template_key,
    work_key,
)
from reconcile import Manager
from reconcile.webhook import DEFAULT_CERT_DIR, DEFAULT_WEBHOOK_PORT
from testenv import FakeClient


def _meta(name: str, namespace: str = "", **fields: object) -> dict[str, object]:
    metadata: dict[str, object] = {"name": name, **fields}
    if namespace:
        metadata["namespace"] = namespace
    return {"metadata": metadata}


def test_a_template_its_binding_and_its_works_share_one_key() -> None:
    template = template_key("Deployment")(_meta("web", "shop"))
    binding = binding_key(_meta(binding_name("Deployment", "web"), "shop"))
    annotations = {
        RESOURCE_BINDING_NAMESPACE_ANNOTATION: "shop",
        RESOURCE_BINDING_NAME_ANNOTATION: binding_name("Deployment", "web"),
    }
    work = work_key(_meta("web-abc", "karmada-es-member1", annotations=annotations))
    assert template == binding == work == "shop/web-deployment"


def test_cluster_scoped_templates_key_by_their_cluster_binding() -> None:
    template = template_key("ClusterRole")(_meta("system:reader"))
    annotations = {
        CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION: binding_name("ClusterRole", "system:reader")
    }
    work = work_key(_meta("w", "karmada-es-member1", annotations=annotations))
    assert template == work == "system.reader-clusterrole"


def test_a_namespace_work_follows_its_namespace() -> None:
    owner = {"kind": "Namespace", "name": "shop", "controller": True}
    work = work_key(_meta("shop-ns", "karmada-es-member1", ownerReferences=[owner]))
    assert work == template_key("Namespace")(_meta("shop"))


def test_reserved_namespaces_have_no_key_and_foreign_works_neither() -> None:
    assert template_key("ConfigMap")(_meta("x", "kube-system")) is None
    assert template_key("Namespace")(_meta("karmada-es-member1")) is None
    assert work_key(_meta("w", "karmada-es-member1")) is None


def test_the_same_kind_gets_the_same_key_function() -> None:
    assert template_key("Deployment") is template_key("Deployment")


def test_sharded_builds_leave_out_the_dependencies_distributor() -> None:
    options = ShardingOptions(name="r0", namespace="karmada-system")
    with pytest.raises(ValueError, match="dependencies-distributor cannot run with --shards"):
        build(
            Manager(client=FakeClient()),
            controllers=["*", "dependencies-distributor"],
            sharding=options,
        )
    context = build(Manager(client=FakeClient()), sharding=options)
    assert context.sharding is not None
    assert "dependencies-distributor" not in context.manager.controller_names


@pytest.mark.parametrize(
    "name", ["R0", "r_0", "r 0", "-r0", "r0.", "", "x" * 64, "r0\n", "über", "r0;rm -rf"]
)
def test_a_shard_name_that_cannot_name_a_lease_is_refused_at_the_flag(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["controller-manager", "--kubeconfig=/nonexistent", "--leader-elect"]
    assert cli.main([*flags, "--shards=auto", f"--shard-name={name}"]) == 2
    assert "shard name" in capsys.readouterr().err  # not a kubeconfig or connection error


def test_sharding_without_leader_election_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["controller-manager", "--kubeconfig=/nonexistent", "--shards=auto"]
    assert cli.main([*flags, "--shard-name=r0"]) == 2
    assert "needs --leader-elect" in capsys.readouterr().err


def test_a_good_shard_name_passes() -> None:
    assert ShardingOptions(name="reconcile-7d9f.b-0", namespace="karmada-system").name


def test_the_assignment_webhook_is_served_only_when_asked() -> None:
    plain = build(Manager(client=FakeClient()), sharding=ShardingOptions("r0", "karmada-system"))
    assert plain.manager.webhook_server.paths == [], "no webhook server unless asked"
    options = ShardingOptions(name="r0", namespace="karmada-system", admission=True)
    context = build(Manager(client=FakeClient()), sharding=options)
    assert context.manager.webhook_server.paths == ["/assign-shard-karmada"]


def test_the_assignment_webhook_without_shards_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flags = ["controller-manager", "--kubeconfig=/nonexistent", "--leader-elect"]
    assert cli.main([*flags, "--shard-assignment-webhook"]) == 2
    assert "needs --shards=auto" in capsys.readouterr().err


def test_the_webhook_server_flags_make_the_managers_server(tmp_path: Path) -> None:
    flags = ["controller-manager", "--webhook-port=10443", f"--webhook-cert-path={tmp_path}"]
    server = WebhookServerOptions.from_args(
        cli._parser().parse_args([*flags, "--webhook-cert-name=a.pem"])
    ).server()
    assert (server.port, server.cert_dir) == (10443, str(tmp_path))
    assert (server.cert_name, server.key_name) == ("a.pem", "tls.key")
    default = WebhookServerOptions.from_args(
        cli._parser().parse_args(["controller-manager"])
    ).server()
    assert (default.port, default.cert_dir) == (DEFAULT_WEBHOOK_PORT, DEFAULT_CERT_DIR)


@pytest.mark.parametrize("weight", ["1.5", "-0.1", "nan"])
def test_a_leader_weight_outside_0_and_1_is_refused_at_the_flag(
    weight: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["controller-manager", "--kubeconfig=/nonexistent", "--leader-elect"]
    assert cli.main([*flags, "--shards=auto", f"--shard-leader-weight={weight}"]) == 2
    assert "--shard-leader-weight must be within [0, 1]" in capsys.readouterr().err


def test_the_leader_weight_without_shards_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["controller-manager", "--kubeconfig=/nonexistent", "--leader-elect"]
    assert cli.main([*flags, "--shard-leader-weight=0.5"]) == 2
    assert "needs --shards=auto" in capsys.readouterr().err


def test_the_leader_weight_flag_reaches_the_sharder() -> None:
    flags = ["controller-manager", "--leader-elect", "--shards=auto", "--shard-name=r0"]
    default = ShardingOptions.from_args(cli._parser().parse_args(flags))
    assert default is not None
    assert default.leader_weight == LEADER_WEIGHT
    options = ShardingOptions.from_args(
        cli._parser().parse_args([*flags, "--shard-leader-weight=0.7"])
    )
    assert options is not None
    sharding = build(Manager(client=FakeClient()), sharding=options).sharding
    assert sharding is not None
    assert sharding.sharder.weights == {"r0": 0.7}
