"""The Cluster validator refuses a secretRef naming another Cluster's Secret (#26 item 6).

Whoever may write Clusters could otherwise point one at their own host and at another member's
Secret. The validator reads the Secrets a Cluster names (here from testenv's FakeClient) and
refuses one bound, by its controller ownerReference, to a Cluster of another name; a Secret bound
to nobody, to this Cluster or to an earlier Cluster of its name is admitted, and so is one that
cannot be read, or not within the lookup timeout (the controller-manager refuses it at runtime).
"""

from __future__ import annotations

import copy
from typing import Any

import anyio
import pytest

from controllers.cluster import MemberOptions
from controllers.cluster.binding import owner_reference
from controllers.webhook.cluster import (
    SECRET_LOOKUP_TIMEOUT,
    ClusterValidator,
    secret_binding_problems,
)
from controllers.webhook.fields import Refused
from reconcile import GVK, Forbidden
from testenv.fake import FakeClient

pytestmark = pytest.mark.anyio

SECRET = GVK("", "v1", "Secret")
NAMESPACE = "karmada-cluster"


def cluster(name: str = "intruder", uid: str = "uid-intruder", **spec: Any) -> dict[str, Any]:
    spec.setdefault("apiEndpoint", "https://attacker.example:6443")
    spec.setdefault("secretRef", {"namespace": NAMESPACE, "name": "member1"})
    metadata = {"name": name, "uid": uid}
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": metadata, "spec": spec}  # fmt: skip


def secret(name: str = "member1", *owners: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NAMESPACE}
    if owners:
        metadata["ownerReferences"] = list(owners)
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": {"token": "dA=="}}


MEMBER1 = owner_reference("member1", "uid-member1")


async def validator(*secrets: dict[str, Any]) -> tuple[ClusterValidator, list[str]]:
    """A validator reading ``secrets`` from a fake apiserver, and the names it read."""
    client, read = FakeClient(), []
    for stored in secrets:
        await client.create(stored)

    async def read_secret(namespace: str, name: str) -> dict[str, Any]:
        read.append(f"{namespace}/{name}")
        return await client.get(SECRET, name, namespace=namespace)

    return ClusterValidator(MemberOptions(), read_secret=read_secret), read


async def test_a_secret_bound_to_another_cluster_is_refused_naming_both() -> None:
    checking, read = await validator(secret("member1", MEMBER1))
    with pytest.raises(Refused) as refused:
        await checking.validate_create(cluster())
    assert str(refused.value) == (
        "SecretNotBound: Secret karmada-cluster/member1 (spec.secretRef) is bound to Cluster "
        "'member1', not to Cluster intruder: a Cluster may use only its own Secret"
    )
    assert read == ["karmada-cluster/member1"]


async def test_the_impersonator_secret_is_checked_too() -> None:
    checking, _ = await validator(secret("member1", MEMBER1), secret("own"))
    reference = {"namespace": NAMESPACE, "name": "member1"}
    obj = cluster(
        secretRef={"namespace": NAMESPACE, "name": "own"}, impersonatorSecretRef=reference
    )
    with pytest.raises(
        Refused, match=r"\(spec.impersonatorSecretRef\) is bound to Cluster 'member1'"
    ):
        await checking.validate_create(obj)


@pytest.mark.parametrize(
    "stored",
    [
        secret("member1", owner_reference("intruder", "uid-intruder")),
        secret("member1"),
        secret("member1", owner_reference("intruder", "uid-of-an-earlier-intruder")),
        secret("member1", {**MEMBER1, "controller": False}),
        secret("member1", {**MEMBER1, "kind": "Deployment", "apiVersion": "apps/v1"}),
        secret("member1", {**MEMBER1, "apiVersion": "other.example/v1alpha1"}),
        secret("elsewhere", MEMBER1),
    ],
    ids=[
        "bound to this Cluster",
        "bound to none yet (join binds it after creating the Cluster)",
        "bound to an earlier Cluster of this name (join binds it again)",
        "another Cluster's, but not as controller",
        "controlled by something other than a Cluster",
        "controlled by a Cluster of another group",
        "not found (a Cluster often comes before its Secret)",
    ],
)
async def test_other_secrets_are_admitted(stored: dict[str, Any]) -> None:
    checking, _ = await validator(stored)
    assert await checking.validate_create(cluster()) == []


async def test_a_cluster_naming_its_own_name_s_secret_is_admitted() -> None:
    checking, _ = await validator(secret("member1", MEMBER1))
    assert await checking.validate_create(cluster("member1", "uid-member1")) == []


async def test_a_secret_outside_the_cluster_namespace_is_not_read() -> None:
    checking, read = await validator(secret("member1", MEMBER1))
    # A Push cluster is refused for the namespace alone; a Pull one is not looked at either:
    # the webhook may read Secrets of the cluster namespace only.
    elsewhere = {"namespace": "kube-system", "name": "member1"}
    with pytest.raises(Refused, match="SecretRefNotAllowed"):
        await checking.validate_create(cluster(secretRef=elsewhere))
    assert await checking.validate_create(cluster(secretRef=elsewhere, syncMode="Pull")) == []
    assert read == []


async def test_a_pull_cluster_naming_another_s_secret_is_refused() -> None:
    checking, _ = await validator(secret("member1", MEMBER1))
    with pytest.raises(Refused, match="SecretNotBound"):
        await checking.validate_create(cluster(syncMode="Pull"))


async def test_an_update_is_refused_only_when_it_points_at_another_s_secret() -> None:
    checking, _ = await validator(secret("member1", MEMBER1), secret("own"))
    own = cluster(secretRef={"namespace": NAMESPACE, "name": "own"})
    with pytest.raises(Refused, match="bound to Cluster 'member1'"):
        await checking.validate_update(own, cluster())
    # Admitted before the webhook checked Secrets: it keeps its labels and finalizers coming.
    before = cluster()
    labelled = copy.deepcopy(before)
    labelled["metadata"]["labels"] = {"team": "a"}
    assert await checking.validate_update(before, labelled) == []
    assert await checking.validate_update(before, own) == []


async def test_an_unreadable_secret_is_admitted() -> None:
    async def forbidden(namespace: str, name: str) -> dict[str, Any]:
        raise Forbidden({"code": 403, "reason": "Forbidden", "message": "secrets is forbidden"})

    checking = ClusterValidator(read_secret=forbidden)
    assert await checking.validate_create(cluster()) == []


async def test_a_secret_not_read_in_time_is_admitted_in_time() -> None:
    assert SECRET_LOOKUP_TIMEOUT == 2.0
    started = anyio.Event()

    async def stuck(namespace: str, name: str) -> dict[str, Any]:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    checking = ClusterValidator(read_secret=stuck, secret_lookup_timeout=0.05)
    with anyio.fail_after(5):
        assert await checking.validate_create(cluster()) == []
    assert started.is_set()


async def test_without_a_reader_secrets_are_not_looked_at() -> None:
    assert await ClusterValidator().validate_create(cluster()) == []


def test_the_problems_name_each_field_once() -> None:
    obj = cluster(impersonatorSecretRef={"namespace": NAMESPACE, "name": "member1"})
    problems = secret_binding_problems(obj, {"member1": secret("member1", MEMBER1)}, NAMESPACE)
    assert [p.split(" is bound")[0] for p in problems] == [
        "SecretNotBound: Secret karmada-cluster/member1 (spec.secretRef)",
        "SecretNotBound: Secret karmada-cluster/member1 (spec.impersonatorSecretRef)",
    ]
