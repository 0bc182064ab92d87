"""Fuzz the member registry with malformed Clusters and Secrets: a member or MemberConfigError.

Whoever may write a Cluster chooses its endpoint and which Secret holds its token; whoever may
write that Secret chooses its bytes. ``MemberRegistry.ensure`` must register a member or raise
``MemberConfigError`` (which the cluster controllers turn into Ready=False and an Event), never
another exception, which would end as a generic retry with backoff and no word to the user.
Only the public behaviour is targeted: controllers/cluster/registry.py is being rewritten.
"""

from __future__ import annotations

import base64
from typing import Any

import anyio
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from controllers.cluster import MemberConfigError, MemberRegistry
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
NAMESPACES = ["karmada-cluster", "kube-system", ""]


class Member:
    """What the manager hands back for a registered member (the test never connects)."""

    def __init__(self, name: str, config: Any) -> None:
        self.name, self.config = name, config


class FakeManager:
    """The part of reconcile.Manager the registry uses, without starting clients or caches."""

    def __init__(self, api_reader: FakeClient) -> None:
        self.api_reader = api_reader
        self.clusters: dict[str, Any] = {}

    def add_cluster(self, name: str, config: Any) -> Member:
        member = Member(name, config)
        self.clusters[name] = member
        return member

    def remove_cluster(self, name: str) -> Any:
        return self.clusters.pop(name, None)


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
secrets = st.fixed_dictionaries(
    {
        "namespace": mostly(st.just("karmada-cluster"), st.just("kube-system")),
        "name": mostly(st.just("creds"), st.just("other")),
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
            {"name": st.sampled_from(["creds", "missing"])},
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


def _secret(found: dict[str, Any]) -> dict[str, Any]:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": found["name"], "namespace": found["namespace"]},
    }
    if isinstance(found.get("data"), dict):
        secret["data"] = found["data"]
    return secret


async def _ensure(spec: Any, secret: dict[str, Any]) -> Any:
    client = FakeClient()
    try:
        await client.create(_secret(secret))
    except Exception:  # a Secret the fake refuses: the apiserver would too
        event("Secret refused by the fake apiserver")
    registry = MemberRegistry(FakeManager(client))  # type: ignore[arg-type]
    cluster = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
               "metadata": {"name": "member1"}, "spec": spec}  # fmt: skip
    try:
        with within(5), anyio.fail_after(4):
            return await registry.ensure(cluster)
    except MemberConfigError as error:
        return error


# Failures this fuzzer found in the registry before its rewrite (issue #10 point 2), each then an
# exception other than MemberConfigError out of ensure() or an endpoint accepted without TLS.
TOKEN = {"token": _b64(b"token")}
FOUND_BEFORE = [
    pytest.param({"apiEndpoint": "https://127.0.0.1:6443", "secretRef": {"name": "creds"}},
                 {"namespace": "karmada-cluster", "name": "creds", "data": TOKEN},
                 id="secretRef without namespace: ValueError"),
    pytest.param({"apiEndpoint": "https://127.0.0.1:6443",
                  "secretRef": {"name": "creds", "namespace": "karmada-cluster"}},
                 {"namespace": "karmada-cluster", "name": "creds",
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
        assert "member1" in str(outcome)
    else:
        assert isinstance(outcome, Member)
        assert str(outcome.config.host).startswith("https://"), "members are reached over TLS"


@pytest.mark.parametrize(("spec", "secret"), FOUND_BEFORE)
async def test_each_failure_found_before_is_now_refused(spec: Any, secret: dict[str, Any]) -> None:
    outcome = await _ensure(spec, secret)
    assert isinstance(outcome, MemberConfigError), outcome
    _check(outcome)


@fuzz_settings(max_examples=120)
@given(spec=specs, secret=secrets)
async def test_a_cluster_is_registered_or_refused_with_member_config_error(
    spec: Any, secret: dict[str, Any]
) -> None:
    outcome = await _ensure(spec, secret)
    event(type(outcome).__name__)
    _check(outcome)
