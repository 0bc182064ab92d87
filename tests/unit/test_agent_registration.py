"""How reconcile agent claims its Cluster: Pull only, one member per Cluster, clear refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controllers.agent import AgentError, Registration, claim_cluster, cluster_id
from controllers.api import CLUSTER_GVK, crd_paths
from reconcile import GVK
from testenv import FakeClient

asyncio_test = pytest.mark.asyncio(loop_scope="session")


def cluster(name: str = "m", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"syncMode": "Pull", **spec},
    }


def host(*objects: dict[str, Any]) -> FakeClient:
    fake = FakeClient()
    fake.install_crds(crd_paths())
    fake.seed(*objects)
    return fake


@asyncio_test
async def test_the_agent_sets_its_cluster_id_and_the_fields_it_was_told() -> None:
    fake = host(cluster(provider="old"))
    registration = Registration("m", api_endpoint="https://m.example:6443", region="eu")
    claimed = await claim_cluster(fake, "uid-1", registration)
    spec = (await fake.get(CLUSTER_GVK, "m"))["spec"]
    assert spec == claimed["spec"]
    assert spec["id"] == "uid-1"
    assert (spec["apiEndpoint"], spec["region"], spec["provider"]) == (
        "https://m.example:6443",
        "eu",
        "old",  # not told: left as it was
    )
    # Claiming again changes nothing (a restart of the same agent).
    again = await claim_cluster(fake, "uid-1", registration)
    assert again["metadata"]["resourceVersion"] == claimed["metadata"]["resourceVersion"]


@asyncio_test
@pytest.mark.parametrize(
    ("stored", "words"),
    [
        pytest.param(None, "does not exist on the host: register it first", id="missing"),
        pytest.param(cluster(syncMode="Push"), "is a Push cluster", id="push"),
        pytest.param(cluster(id="uid-other"), "belongs to another member", id="other-member"),
    ],
)
async def test_an_agent_that_cannot_serve_its_cluster_is_refused_saying_why(
    stored: dict[str, Any] | None, words: str
) -> None:
    fake = host(*([stored] if stored else []))
    with pytest.raises(AgentError, match=words):
        await claim_cluster(fake, "uid-1", Registration("m"))
    if stored is not None:  # nothing was taken over
        assert (await fake.get(CLUSTER_GVK, "m"))["spec"] == stored["spec"]


@asyncio_test
async def test_the_cluster_id_is_the_uid_of_kube_system() -> None:
    member = FakeClient()
    await member.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}
    )
    stored = await member.get(GVK("", "v1", "Namespace"), "kube-system")
    assert await cluster_id(member) == stored["metadata"]["uid"]
    with pytest.raises(AgentError, match="cannot read the member's namespace kube-system"):
        await cluster_id(FakeClient())


def test_reconcile_agent_with_an_unusable_host_kubeconfig_exits_with_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from controllers.cli import main

    missing = tmp_path / "absent.kubeconfig"
    argv = ["agent", "--cluster-name", "m", "--karmada-kubeconfig", str(missing)]
    assert main([*argv, "--metrics-bind-address", "0"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("agent: ")
    assert "absent.kubeconfig" in error
    assert "Traceback" not in error


@pytest.mark.parametrize("name", ["m,metadata.name=other", "M", "a" * 49, "", "m/x"])
def test_a_cluster_name_that_is_no_cluster_name_is_refused_before_any_request(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hostile --cluster-name: it becomes a field selector and a namespace; refused at once."""
    from controllers.cli import main

    with pytest.raises(ValueError, match="cluster name"):
        Registration(name)
    kubeconfig = tmp_path / "never-read.kubeconfig"  # refused before it is looked at
    argv = ["agent", "--cluster-name", name, "--karmada-kubeconfig", str(kubeconfig)]
    assert main([*argv, "--metrics-bind-address", "0"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("agent: cluster name")
    assert "Traceback" not in error
