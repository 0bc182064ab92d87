"""Fuzz the binding of a Cluster's Secret: exactly the Secrets bound to that Cluster are accepted.

#26 item 6: whoever may write Clusters could point one at their own host and at another member's
Secret. ``controllers.cluster.binding.binding_problem`` lets the controller-manager use a Secret
for a Cluster only when the Secret's ``metadata.ownerReferences`` hold a controller reference
(``controller: true``) of kind ``Cluster`` in group ``cluster.karmada.io`` (any version) naming
that Cluster, with its uid (its name alone before it has one). Random Cluster/Secret pairs
(names, uids, ownerReferences with controller true/false/missing, other kinds and groups, several
of them, malformed ones) are checked against that rule written out here on its own: accepted
exactly when it holds, never an exception. ``bound_elsewhere`` (what the admission webhook
refuses) names the Cluster only when the Secret is bound to one of another name, and the
webhook's ``secret_binding_problems`` refuses exactly then, naming the Secret and that Cluster.

Where the apiserver would refuse the Secret itself (two controller references: "Only one
reference can have Controller set to true"; malformed references) "never raises" and "accepted
only if bound" are checked, not the converse.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from controllers.cluster.binding import binding_problem, bound_elsewhere
from controllers.webhook.cluster import secret_binding_problems
from tests.fuzz.strategies import MALFORMED, fuzz_settings, mostly, nasty_text

NAMESPACE = "karmada-cluster"
NAMES = ["member1", "member2", "MEMBER1", "member1 ", ""]
UIDS = ["uid-member1", "uid-member2", "uid-old", ""]
API_VERSIONS = [
    "cluster.karmada.io/v1alpha1",
    "cluster.karmada.io/v1",
    "cluster.karmada.io/v2beta7",
    "x.karmada.io/v1",
    "karmada.io/v1alpha1",
    "cluster.karmada.io.evil/v1",
    "evil/cluster.karmada.io/v1",
    "cluster.karmada.io",
    "v1",
]
KINDS = ["Cluster", "cluster", "Clusters", "Secret", "ClusterRole"]

# One ownerReference as the apiserver stores them: string fields, controller a bool or absent.
references = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(API_VERSIONS),
        "kind": st.sampled_from(KINDS),
        "name": mostly(st.sampled_from(NAMES), nasty_text),
        "uid": mostly(st.sampled_from(UIDS), nasty_text),
    },
    optional={
        "controller": st.sampled_from([True, False]),
        "blockOwnerDeletion": st.booleans(),
    },
)
malformed = st.one_of(
    MALFORMED,
    st.lists(st.one_of(references, MALFORMED, st.builds(dict)), max_size=4),
    st.lists(
        st.fixed_dictionaries(
            {
                "apiVersion": st.one_of(st.sampled_from(API_VERSIONS), MALFORMED),
                "kind": st.one_of(st.sampled_from(KINDS), MALFORMED),
                "name": st.one_of(st.sampled_from(NAMES), MALFORMED),
                "uid": st.one_of(st.sampled_from(UIDS), MALFORMED),
                "controller": st.one_of(st.just(True), st.just("true"), st.just(1), MALFORMED),
            }
        ),
        max_size=3,
    ),
)


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": draw(st.sampled_from(NAMES[:3]))}
    uid = draw(st.sampled_from([*UIDS[:3], None]))
    if uid is not None:
        metadata["uid"] = uid
    spec = {
        "apiEndpoint": "https://attacker.example",
        "secretRef": {"namespace": NAMESPACE, "name": "creds"},
    }
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": metadata, "spec": spec}  # fmt: skip


@st.composite
def near(draw: st.DrawFn, cluster: dict[str, Any]) -> dict[str, Any]:
    """The reference ``reconcile join`` writes for ``cluster``, or that with one field changed."""
    metadata = cluster["metadata"]
    exact = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
             "name": metadata["name"], "uid": metadata.get("uid") or "uid-member1",
             "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    fields = [None, "apiVersion", "kind", "name", "name", "uid", "controller"]
    changed = draw(st.sampled_from(fields))
    if changed == "controller":
        value = draw(st.sampled_from([None, False, "true", 1]))  # the last two: not storable
        if value is None:
            del exact["controller"]
        else:
            exact["controller"] = value
    elif changed is not None:
        pool = {"apiVersion": API_VERSIONS, "kind": KINDS, "name": NAMES, "uid": UIDS}[changed]
        exact[changed] = draw(st.sampled_from(pool))
    return exact


@st.composite
def pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """A Cluster, a Secret, and whether the apiserver would store the Secret's ownerReferences
    as they are."""
    cluster = draw(clusters())
    metadata: dict[str, Any] = {"name": "creds", "namespace": NAMESPACE}
    shape = draw(st.sampled_from(["none", "well-formed", "well-formed", "malformed", "metadata"]))
    if shape == "metadata":
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": draw(MALFORMED)}
        return cluster, secret, False
    if shape == "well-formed":
        one = st.one_of(near(cluster), near(cluster), references)
        found = draw(st.lists(one, min_size=1, max_size=3))
        if draw(mostly(st.just(True), st.just(False))):  # mostly one controller, as stored
            controllers = [r for r in found if r.get("controller") is True]
            for extra in controllers[1:]:
                extra["controller"] = False
        metadata["ownerReferences"] = found
    elif shape == "malformed":
        metadata["ownerReferences"] = draw(malformed)
    found = metadata.get("ownerReferences") or []
    storable = shape != "malformed" and _controllers(found) <= 1
    storable = storable and all(isinstance(r.get("controller", False), bool) for r in found)
    return cluster, {"apiVersion": "v1", "kind": "Secret", "metadata": metadata}, storable


def _controllers(references: Any) -> int:
    if not isinstance(references, list):
        return 0
    return sum(1 for r in references if isinstance(r, dict) and r.get("controller") is True)


def _names_a_cluster(reference: Any) -> bool:
    """A controller reference of kind Cluster in cluster.karmada.io, of some version."""
    if not isinstance(reference, dict) or reference.get("controller") is not True:
        return False
    api_version = reference.get("apiVersion")
    if not isinstance(api_version, str) or api_version.count("/") != 1:
        return False
    group, version = api_version.split("/")
    return group == "cluster.karmada.io" and bool(version) and reference.get("kind") == "Cluster"


def _owner(secret: dict[str, Any]) -> dict[str, Any] | None:
    metadata = secret.get("metadata")
    references = metadata.get("ownerReferences") if isinstance(metadata, dict) else None
    found = [r for r in references if _names_a_cluster(r)] if isinstance(references, list) else []
    return found[0] if found else None


def _bound(secret: dict[str, Any], cluster: dict[str, Any]) -> bool:
    """The rule, on its own: a Cluster controller reference naming the Cluster (and its uid)."""
    name, uid = cluster["metadata"]["name"], cluster["metadata"].get("uid") or ""
    owner = _owner(secret)
    return owner is not None and owner.get("name") == name and (not uid or owner.get("uid") == uid)


@fuzz_settings(max_examples=600)
@given(pair=pairs())
def test_exactly_the_secrets_bound_to_the_cluster_are_accepted(
    pair: tuple[dict[str, Any], dict[str, Any], bool],
) -> None:
    cluster, secret, storable = pair
    problem = binding_problem(secret, cluster, "Secret karmada-cluster/creds")
    elsewhere = bound_elsewhere(secret, cluster)
    refused = secret_binding_problems(cluster, {"creds": secret}, NAMESPACE)
    event("accepted" if problem is None else "refused")
    event("storable" if storable else "the apiserver would refuse the Secret")
    if problem is None:
        assert _bound(secret, cluster), secret  # accepted only if bound, whatever the input
        assert elsewhere is None
        assert refused == []
    else:
        assert isinstance(problem, str)
        assert "Secret karmada-cluster/creds" in problem
    if storable:
        assert (problem is None) == _bound(secret, cluster), (secret, cluster, problem)
        owner = _owner(secret)
        other = owner is not None and owner.get("name") != cluster["metadata"]["name"]
        assert (elsewhere is not None) == other, (secret, elsewhere)
    if elsewhere is not None:
        assert elsewhere.name != cluster["metadata"]["name"]
        event("bound to another Cluster")
        (message,) = refused
        assert message.startswith("SecretNotBound: Secret karmada-cluster/creds (spec.secretRef)")
        assert f"is bound to Cluster {elsewhere.name[:200]!r}" in message
    else:
        assert refused == []


@pytest.mark.parametrize(
    ("references", "accepted"),
    [
        ([], False),
        ([{"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "name": "member1",
           "uid": "uid-member1", "controller": True}], True),
        ([{"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "name": "member1",
           "uid": "uid-member1"}], False),
        ([{"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "name": "member1",
           "uid": "uid-member1", "controller": "true"}], False),
        ([{"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "name": "member1",
           "uid": "uid-old", "controller": True}], False),
        ([{"apiVersion": "cluster.karmada.io.evil/v1", "kind": "Cluster", "name": "member1",
           "uid": "uid-member1", "controller": True}], False),
        ([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "uid": "u",
           "controller": False},
          {"apiVersion": "cluster.karmada.io/v1", "kind": "Cluster", "name": "member1",
           "uid": "uid-member1", "controller": True}], True),
    ],
    ids=[
        "no reference",
        "the controller reference join writes",
        "an owner reference, not a controller one",
        "controller the string true (not stored by the apiserver)",
        "an earlier Cluster of the name",
        "a look-alike group",
        "beside a plain reference to something else, another version",
    ],
)  # fmt: skip
def test_the_rule_on_fixed_pairs(references: list[dict[str, Any]], accepted: bool) -> None:
    secret = {"metadata": {"name": "creds", "ownerReferences": references}}
    cluster = {"metadata": {"name": "member1", "uid": "uid-member1"}}
    assert (binding_problem(secret, cluster, "Secret creds") is None) is accepted
    assert _bound(secret, cluster) is accepted
