"""Fuzz member connections with malformed Clusters and Secrets: a member or MemberConfigError.

Whoever may write a Cluster chooses its endpoint and which Secret holds its token; whoever may
write that Secret chooses its bytes. What ``ClusterProvider`` does with a Cluster and the Secret
it names (``member_connection``, then ``member_config``) must give a config to engage the member
with or raise ``MemberConfigError`` (which the cluster controllers turn into Ready=False and an
Event), never another exception, which would leave the Cluster unengaged with no word to the user.

Cluster/Secret pairs (#26 item 6): random secretRef names and namespaces, random
ownerReferences on the Secrets (none, this Cluster's, another's, an earlier uid, not a controller,
another kind or group, several, malformed) and a Cluster with or without a uid. A connection is
only ever made with a Secret bound to the Cluster: a controller ownerReference of kind Cluster of
cluster.karmada.io naming it, with its uid.
"""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from controllers.cluster import (
    INSECURE_ENDPOINT,
    INVALID_ENDPOINT,
    INVALID_SECRET,
    SECRET_NOT_BOUND,
    SECRET_NOT_FOUND,
    SECRET_REF_NOT_ALLOWED,
    MemberConfigError,
    MemberOptions,
)
from controllers.cluster.connection import member_config, member_connection, secret_name
from reconcile import GVK
from testenv.fake import FakeClient
from tests.fuzz.strategies import (
    MALFORMED,
    crd_schema,
    from_schema,
    fuzz_settings,
    mostly,
    nasty_text,
    within,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

CLUSTERS = "cluster.karmada.io_clusters.yaml"
SECRET = GVK("", "v1", "Secret")
REASONS = {INSECURE_ENDPOINT, INVALID_ENDPOINT, INVALID_SECRET, SECRET_NOT_BOUND, SECRET_NOT_FOUND,
           SECRET_REF_NOT_ALLOWED}  # fmt: skip
NAMESPACES = ["karmada-cluster", "kube-system", ""]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


CA_PEM = (
    b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQk3jEXAMPLEAAAAAAAAAAAAAAAAw\n"
    b"-----END CERTIFICATE-----\n"
)
# Secret data is bytes in base64, which the apiserver checks; the bytes themselves are anything.
tokens = st.one_of(
    st.text(min_size=1, max_size=30).map(lambda t: _b64(t.encode())),
    st.binary(max_size=30).map(_b64),
    st.sampled_from([_b64(b"\xff\xfe\x00token"), "", _b64(b"x" * 5000)]),
)
ca_bundles = st.one_of(st.sampled_from([_b64(CA_PEM), _b64(b"garbage"), "%%%", ""]), MALFORMED)
UID = "uid-member1"


def _owner(**changes: Any) -> dict[str, Any]:
    owner = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "name": "member1",
             "uid": UID, "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    return {**owner, **changes}


owner_references = st.one_of(
    st.none(),
    st.just([_owner()]),
    st.lists(
        st.one_of(
            st.just(_owner()),
            st.builds(
                _owner,
                name=st.sampled_from(["member1", "member2", "", "MEMBER1"]),
                uid=st.sampled_from([UID, "uid-member2", "uid-old", ""]),
                controller=st.sampled_from([True, False, None, "true"]),
                kind=st.sampled_from(["Cluster", "Secret", "cluster"]),
                apiVersion=st.sampled_from(
                    [
                        "cluster.karmada.io/v1alpha1",
                        "cluster.karmada.io/v1",
                        "x.karmada.io/v1",
                        "v1",
                    ]
                ),
            ),
            MALFORMED,
        ),
        max_size=3,
    ),
    MALFORMED,
)
secrets = st.fixed_dictionaries(
    {
        "namespace": mostly(st.just("karmada-cluster"), st.just("kube-system")),
        "name": mostly(st.just("creds"), st.just("other")),
        "owners": owner_references,
        "data": mostly(
            st.fixed_dictionaries(
                {"token": mostly(tokens, st.none())},
                optional={"caBundle": ca_bundles},
            ),
            st.just({}),
        ),
    }
)
endpoints = mostly(
    st.sampled_from(
        [
            "https://127.0.0.1:6443", "https://member.example:443/prefix", "http://127.0.0.1:8080",
            "127.0.0.1:6443", "member.example", "https://", "https://[::1", "ftp://x", "",
            "https://user:pw@host", "https://h/?q=1#f",
        ]
    ),
    st.one_of(nasty_text, MALFORMED),
)  # fmt: skip
references = mostly(
    st.just({"name": "creds", "namespace": "karmada-cluster"}),
    st.one_of(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["creds", "missing", "member2"])},
            optional={"namespace": st.sampled_from(NAMESPACES)},
        ),
        MALFORMED,
    ),
)
shaped_specs = st.fixed_dictionaries(
    {"apiEndpoint": endpoints, "secretRef": references},
    optional={
        "insecureSkipTLSVerification": st.booleans(),
        "impersonatorSecretRef": references,
        "proxyURL": nasty_text,
    },
)
specs = st.one_of(
    shaped_specs, shaped_specs, shaped_specs, from_schema(crd_schema(CLUSTERS, "spec"))
)


# Member2's Secret, bound to member2 and usable: what a thief's Cluster would point at.
OTHERS = {"apiVersion": "v1", "kind": "Secret",
          "metadata": {"name": "member2", "namespace": "karmada-cluster",
                       "ownerReferences": [_owner(name="member2", uid="uid-member2")]},
          "data": {"token": _b64(b"member2-token")}}  # fmt: skip


def _secret(found: dict[str, Any]) -> dict[str, Any]:
    secret: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": found["name"], "namespace": found["namespace"]},
    }
    if found.get("owners") is not None:
        secret["metadata"]["ownerReferences"] = found["owners"]
    if isinstance(found.get("data"), dict):
        secret["data"] = found["data"]
    return secret


async def _ensure(spec: Any, secret: dict[str, Any], uid: str | None = None) -> Any:
    client = FakeClient()
    for stored in (_secret(secret), OTHERS):
        try:
            await client.create(stored)
        except Exception:  # a Secret the fake refuses: the apiserver would too
            event("Secret refused by the fake apiserver")
    metadata = {"name": "member1"} if uid is None else {"name": "member1", "uid": uid}
    cluster = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
               "metadata": metadata, "spec": spec}  # fmt: skip
    used = await _named_secret(client, cluster)
    try:
        with within(5), anyio.fail_after(4):
            connection = member_connection(cluster, used, MemberOptions())
            config = await member_config("member1", connection.source)
    except MemberConfigError as error:
        return error
    assert used is not None
    _check_bound(used, uid)
    return config


async def _named_secret(client: FakeClient, cluster: dict[str, Any]) -> dict[str, Any] | None:
    """The Secret the provider would pass: the one of the cluster namespace secretRef names."""
    name = secret_name(cluster)
    if name is None:
        return None
    try:
        return await client.get(SECRET, name, namespace="karmada-cluster")
    except Exception:  # not there (or a name the fake refuses to look up)
        return None


def _check_bound(secret: dict[str, Any], uid: str | None) -> None:
    """The Secret a member was connected with is bound to member1 (and its uid, if it has one)."""
    owners = secret["metadata"].get("ownerReferences") or []
    assert any(
        isinstance(owner, dict)
        and owner.get("controller") is True
        and str(owner.get("apiVersion", "")).startswith("cluster.karmada.io/")
        and owner.get("kind") == "Cluster"
        and owner.get("name") == "member1"
        and (uid is None or owner.get("uid") == uid)
        for owner in owners
    ), f"connected with a Secret not bound to member1: {owners}"


# Failures this fuzzer found in the member registry before its rewrite (issue #10 point 2), each
# then an exception other than MemberConfigError or an endpoint accepted without TLS.
TOKEN = {"token": _b64(b"token")}
BOUND = [_owner()]
FOUND_BEFORE = [
    pytest.param({"apiEndpoint": "https://127.0.0.1:6443", "secretRef": {"name": "creds"}},
                 {"namespace": "karmada-cluster", "name": "creds", "data": TOKEN},
                 id="secretRef without namespace: ValueError"),
    pytest.param({"apiEndpoint": "https://127.0.0.1:6443",
                  "secretRef": {"name": "creds", "namespace": "karmada-cluster"}},
                 {"namespace": "karmada-cluster", "name": "creds", "owners": BOUND,
                  "data": {"token": _b64(b"\xff\xfetoken")}},
                 id="token not UTF-8: UnicodeDecodeError"),
    pytest.param({"apiEndpoint": "https://127.0.0.1:6443", "secretRef": 5},
                 {"namespace": "karmada-cluster", "name": "creds", "data": TOKEN},
                 id="secretRef of the wrong type: AttributeError"),
    pytest.param({"apiEndpoint": "http://127.0.0.1:8080",
                  "secretRef": {"name": "creds", "namespace": "karmada-cluster"}},
                 {"namespace": "karmada-cluster", "name": "creds", "data": TOKEN},
                 id="http endpoint accepted"),
]  # fmt: skip


def _check(outcome: Any) -> None:
    if isinstance(outcome, MemberConfigError):
        assert outcome.reason in REASONS, outcome
        assert str(outcome), "a refusal says why"
    else:
        assert str(outcome.host).startswith("https://"), "members are reached over TLS"


@pytest.mark.parametrize(("spec", "secret"), FOUND_BEFORE)
async def test_each_failure_found_before_is_now_refused(spec: Any, secret: dict[str, Any]) -> None:
    outcome = await _ensure(spec, secret)
    assert isinstance(outcome, MemberConfigError), outcome
    _check(outcome)


@fuzz_settings(max_examples=120)
@given(spec=specs, secret=secrets, uid=st.sampled_from([UID, None]))
async def test_a_cluster_is_registered_or_refused_with_member_config_error(
    spec: Any, secret: dict[str, Any], uid: str | None
) -> None:
    outcome = await _ensure(spec, secret, uid)
    event(type(outcome).__name__)
    if isinstance(outcome, MemberConfigError):
        event(outcome.reason)
    _check(outcome)


async def test_another_members_secret_never_connects() -> None:
    """The thief's pair, fixed: an endpoint of their own and member2's bound, usable Secret."""
    spec = {"apiEndpoint": "https://attacker.example",
            "secretRef": {"name": "member2", "namespace": "karmada-cluster"}}  # fmt: skip
    secret = {"namespace": "karmada-cluster", "name": "creds", "data": TOKEN, "owners": BOUND}
    outcome = await _ensure(spec, secret, UID)
    assert isinstance(outcome, MemberConfigError), outcome
    assert outcome.reason == "SecretNotBound"


pair_references = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["creds", "member2", "missing"]),
        "namespace": mostly(st.just("karmada-cluster"), st.sampled_from(NAMESPACES)),
    }
)
bound_secrets = st.fixed_dictionaries(
    {
        "namespace": mostly(st.just("karmada-cluster"), st.just("kube-system")),
        "name": mostly(st.just("creds"), st.just("member2")),
        "owners": owner_references,
        "data": st.just(TOKEN),
    }
)


@fuzz_settings(max_examples=200)
@given(reference=pair_references, secret=bound_secrets, uid=st.sampled_from([UID, None]))
async def test_cluster_secret_pairs_connect_only_with_a_secret_bound_to_the_cluster(
    reference: dict[str, Any], secret: dict[str, Any], uid: str | None
) -> None:
    """Only the binding decides here: the endpoint and token are usable."""
    spec = {"apiEndpoint": "https://attacker.example", "secretRef": reference}
    outcome = await _ensure(spec, secret, uid)  # _ensure checks the binding of a connection
    event(type(outcome).__name__)
    if isinstance(outcome, MemberConfigError):
        event(outcome.reason)
    _check(outcome)
