"""Binding ties a member's credential Secret to the one Cluster it belongs to.

Without it, whoever may write a Cluster could point ``spec.apiEndpoint`` at a host of their own
and ``spec.secretRef`` at another member's Secret: the controller-manager would then send that
member's token to them. So a Cluster's Secret is used only when it is bound to that Cluster: its
``metadata.ownerReferences`` hold a controller reference (``controller: true``) to the Cluster,
kind ``Cluster`` of ``cluster.karmada.io``, with the Cluster's name and uid. That is the reference
``karmadactl join`` writes after creating the Cluster (``metav1.NewControllerRef(cluster,
Cluster kind)`` patched onto the Secret: karmada-io/karmada pkg/karmadactl/util/cluster.go,
bindControlPlaneSecretsToCluster, and the older pkg/karmadactl/join.go), so Secrets joined by
Karmada pass as they are; ``reconcile join`` writes the same one (``controllers.join``). The
apiserver lets an object have one controller reference only, so a Secret is bound to one Cluster
at most, and binding it takes a write of the Secret, which tenants who may write Clusters lack.

The uid makes a Secret left from an earlier Cluster of the same name (ownerReferences keep the
old uid; the garbage collector deletes such a Secret unless orphaned) unusable by a new one until
it is bound again (``reconcile join NAME --refresh``).

Secrets written before binding existed (by ``reconcile join`` of earlier versions, or by hand)
carry no reference: their Cluster is Ready=False, reason ``SecretNotBound``, with a message
saying how to bind (run ``reconcile join NAME --refresh``, or add the ownerReference).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controllers.api import CLUSTER_GROUP, CLUSTER_GVK

__all__ = [
    "SECRET_NOT_BOUND",
    "ClusterOwner",
    "binding_problem",
    "bound_elsewhere",
    "cluster_owner",
    "owner_reference",
]

SECRET_NOT_BOUND: Final = "SecretNotBound"
"""The Secret named by spec.secretRef is not bound to the Cluster (another's, or nobody's)."""

_PREVIEW: Final = 200


@dataclass(frozen=True)
class ClusterOwner:
    """The Cluster a Secret's controller reference names."""

    name: str
    uid: str


def owner_reference(name: str, uid: str) -> dict[str, Any]:
    """The controller reference binding a Secret to Cluster ``name`` of ``uid`` (as
    apimachinery's ``metav1.NewControllerRef``: controller and blockOwnerDeletion true)."""
    return {
        "apiVersion": CLUSTER_GVK.api_version,
        "kind": CLUSTER_GVK.kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def cluster_owner(secret: Mapping[str, Any]) -> ClusterOwner | None:
    """The Cluster a Secret (or its metadata) is bound to, None when it is bound to none.

    Only a controller reference counts, of any version of cluster.karmada.io: a plain owner
    reference says that the Secret goes with the Cluster, not that it is its credential.
    """
    metadata = secret.get("metadata")
    references = metadata.get("ownerReferences") if isinstance(metadata, Mapping) else None
    if not isinstance(references, list):
        return None
    for reference in references:
        if not isinstance(reference, Mapping) or reference.get("controller") is not True:
            continue
        group = str(reference.get("apiVersion") or "").rpartition("/")[0]
        if group == CLUSTER_GROUP and reference.get("kind") == CLUSTER_GVK.kind:
            return ClusterOwner(str(reference.get("name") or ""), str(reference.get("uid") or ""))
    return None


def bound_elsewhere(secret: Mapping[str, Any], cluster: Mapping[str, Any]) -> ClusterOwner | None:
    """The other Cluster a Secret is bound to (one of another name); None when it is bound to
    ``cluster``, to none, or to an earlier Cluster of ``cluster``'s name.

    What the admission webhook refuses a Cluster for (``controllers.webhook.cluster``). A Secret
    bound to nobody is admitted: the Cluster comes first and ``reconcile join`` binds the Secret
    to it after. So is one bound to another uid of the same name: a name is held by one Cluster
    at a time, so that Cluster is gone, and join binds its Secret to the new one; until then
    ``binding_problem`` keeps the controller-manager from using it.
    """
    owner = cluster_owner(secret)
    metadata = cluster.get("metadata")
    name = str(metadata.get("name") or "") if isinstance(metadata, Mapping) else ""
    if owner is None or owner.name == name:
        return None
    return owner


def binding_problem(
    secret: Mapping[str, Any], cluster: Mapping[str, Any], where: str
) -> str | None:
    """Why the Secret (``where`` names it) may not serve ``cluster``; None when it is bound to it.

    A Cluster without a uid (not yet created) matches on its name alone.
    """
    metadata = cluster.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name, uid = str(metadata.get("name") or ""), str(metadata.get("uid") or "")
    owner = cluster_owner(secret)
    if owner is None:
        return (
            f"{where} is not bound to Cluster {name}: it has no controller ownerReference to a "
            "Cluster, and the controller-manager uses a Secret only for the Cluster it is bound "
            f"to. Bind it with `reconcile join {name} --refresh`, or add to the Secret the "
            "ownerReference karmadactl join writes: {apiVersion: "
            f"{CLUSTER_GVK.api_version}, kind: Cluster, name: {name}, uid: {uid or '<uid>'}, "
            "controller: true}"
        )
    if owner.name != name:
        return (
            f"{where} is bound to Cluster {owner.name[:_PREVIEW]!r}, not to Cluster {name}: a "
            "Cluster may use only its own Secret"
        )
    if uid and owner.uid != uid:
        return (
            f"{where} is bound to an earlier Cluster {name} (uid {owner.uid[:_PREVIEW]!r}), not "
            f"to this one (uid {uid}): bind it again with `reconcile join {name} --refresh`"
        )
    return None
