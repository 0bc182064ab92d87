"""The member-connection rules: endpoints, Secret references, Secret contents and binding."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from controllers.api import crd_paths
from controllers.cli import _parser
from controllers.cluster import (
    INSECURE_ENDPOINT,
    INVALID_ENDPOINT,
    INVALID_KUBECONFIG,
    INVALID_SECRET,
    SECRET_NOT_BOUND,
    SECRET_NOT_FOUND,
    SECRET_REF_NOT_ALLOWED,
    MemberConfigError,
    MemberOptions,
    member_credentials,
    member_endpoint,
    secret_reference,
)
from controllers.cluster.connection import member_config, member_connection, secret_name
from reconcile import GVK, ClusterConfig, NotFound
from testenv import FakeClient
from testenv.certs import CertificateAuthority

asyncio = pytest.mark.asyncio(loop_scope="session")

SECRET = GVK("", "v1", "Secret")
TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.c2lnbmF0dXJl"


def b64(raw: bytes | str) -> str:
    return base64.b64encode(raw.encode() if isinstance(raw, str) else raw).decode()


def bound_to(cluster: str, uid: str = "uid-m", **reference: Any) -> list[dict[str, Any]]:
    """The ownerReferences of a Secret bound to Cluster ``cluster``, as karmadactl join writes."""
    owner = {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "name": cluster,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return [{**owner, **reference}]


# -- endpoints ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "url"),
    [
        pytest.param("https://10.0.0.1:6443", "https://10.0.0.1:6443", id="https-url"),
        pytest.param("10.0.0.1:6443", "https://10.0.0.1:6443", id="ip-port-means-https"),
        pytest.param("member.example.com", "https://member.example.com", id="host-means-https"),
        pytest.param("[::1]:6443", "https://[::1]:6443", id="ipv6-port"),
        pytest.param("HTTPS://Member:443/prefix/", "https://Member:443/prefix", id="normalized"),
        pytest.param(
            "https://rancher.example/k8s/clusters/c-1",
            "https://rancher.example/k8s/clusters/c-1",
            id="path-prefix",
        ),
    ],
)
def test_https_endpoints_are_accepted_and_host_port_means_https(endpoint: str, url: str) -> None:
    assert member_endpoint(endpoint) == url


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:8080", "HTTP://member:80/"])
def test_plain_http_is_refused_as_insecure(endpoint: str) -> None:
    with pytest.raises(MemberConfigError) as caught:
        member_endpoint(endpoint)
    assert caught.value.reason == INSECURE_ENDPOINT
    assert "clear text" in str(caught.value)
    assert "--allow-insecure-member-endpoints" in str(caught.value)


def test_plain_http_is_accepted_only_when_allowed_explicitly() -> None:
    assert member_endpoint("http://127.0.0.1:8080", allow_insecure=True) == "http://127.0.0.1:8080"


@pytest.mark.parametrize(
    ("endpoint", "words"),
    [
        pytest.param(None, "missing", id="absent"),
        pytest.param("", "missing", id="empty"),
        pytest.param(6443, "missing", id="not-a-string"),
        pytest.param("ftp://member", "scheme 'ftp'", id="other-scheme"),
        pytest.param("unix:///var/run/kube.sock", "scheme 'unix'", id="unix-socket"),
        pytest.param("https://", "names no host", id="no-host"),
        pytest.param("https://member:99999", "not a URL", id="port-out-of-range"),
        pytest.param("member:api", "not a URL", id="port-not-a-number"),
        pytest.param("::1", "not a URL", id="bare-ipv6"),
        pytest.param("https://member?watch=1", "query or fragment", id="query"),
        pytest.param("https://member#x", "query or fragment", id="fragment"),
        pytest.param("https://mem ber", "whitespace", id="space"),
        pytest.param("https://member\r\nHost: evil", "control", id="header-injection"),
        pytest.param("https://mëmber", "non-ASCII", id="non-ascii"),
    ],
)
def test_unusable_endpoints_are_refused_saying_why(endpoint: Any, words: str) -> None:
    with pytest.raises(MemberConfigError) as caught:
        member_endpoint(endpoint, allow_insecure=True)
    assert caught.value.reason == INVALID_ENDPOINT
    assert words in str(caught.value)


def test_user_info_in_an_endpoint_is_refused_without_repeating_it() -> None:
    with pytest.raises(MemberConfigError) as caught:
        member_endpoint("https://admin:hunter2@member:6443")
    assert caught.value.reason == INVALID_ENDPOINT
    assert "user info" in str(caught.value)
    assert "hunter2" not in str(caught.value)


# -- Secret references -------------------------------------------------------------------------


def test_a_secret_reference_in_the_cluster_namespace_gives_the_secret_name() -> None:
    spec = {"secretRef": {"namespace": "karmada-cluster", "name": "member1"}}
    assert secret_reference(spec, "secretRef", "karmada-cluster") == "member1"
    assert secret_reference({}, "impersonatorSecretRef", "karmada-cluster") is None


@pytest.mark.parametrize(
    ("reference", "words"),
    [
        pytest.param(
            {"namespace": "kube-system", "name": "admin-token"},
            "Secret kube-system/admin-token",
            id="other-namespace",
        ),
        pytest.param({"namespace": "", "name": "m"}, "without a namespace", id="empty-namespace"),
        pytest.param({"name": "m"}, "without a namespace", id="no-namespace"),
        pytest.param({"namespace": "karmada-cluster"}, ".name is missing", id="no-name"),
        pytest.param({"namespace": "karmada-cluster", "name": ""}, ".name is missing", id="empty"),
        pytest.param("karmada-cluster/m", "not an object", id="not-an-object"),
    ],
)
@pytest.mark.parametrize("field", ["secretRef", "impersonatorSecretRef"])
def test_secret_references_outside_the_cluster_namespace_are_refused(
    field: str, reference: Any, words: str
) -> None:
    with pytest.raises(MemberConfigError) as caught:
        secret_reference({field: reference}, field, "karmada-cluster")
    assert caught.value.reason == SECRET_REF_NOT_ALLOWED
    assert f"spec.{field}" in str(caught.value)
    assert words in str(caught.value)


def test_the_cluster_namespace_is_the_one_configured() -> None:
    spec = {"secretRef": {"namespace": "fleet-secrets", "name": "m"}}
    assert secret_reference(spec, "secretRef", "fleet-secrets") == "m"
    with pytest.raises(MemberConfigError, match="read only from namespace karmada-cluster"):
        secret_reference(spec, "secretRef", "karmada-cluster")
    with pytest.raises(ValueError, match="must not be empty"):
        MemberOptions(cluster_namespace="")


@pytest.mark.parametrize("namespace", ["Bad Name!", "UPPER", "-dash", "a" * 64, "a.b"])
def test_a_cluster_namespace_no_namespace_could_have_is_refused_at_start(namespace: str) -> None:
    with pytest.raises(ValueError, match="is not a namespace name"):
        MemberOptions(cluster_namespace=namespace)


# -- Secret contents ---------------------------------------------------------------------------


def secret(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "data": data}


def test_the_token_and_ca_bundle_come_from_the_secret() -> None:
    ca = b64(CertificateAuthority("member-ca").cert_pem)
    assert member_credentials(secret(token=b64(TOKEN), caBundle=ca), "S") == (TOKEN, ca)
    assert member_credentials(secret(token=b64(TOKEN)), "S") == (TOKEN, "")


def test_whitespace_around_the_token_is_trimmed() -> None:
    assert member_credentials(secret(token=b64(f" {TOKEN}\n")), "S") == (TOKEN, "")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        pytest.param({}, "has no data.token", id="no-token"),
        pytest.param({"token": ""}, "has no data.token", id="empty-value"),
        pytest.param({"token": b64(" \n")}, "data.token is empty", id="only-whitespace"),
        pytest.param({"token": "not base64!"}, "data.token is not base64", id="not-base64"),
        pytest.param({"token": b64(b"\xff\xfe" + TOKEN.encode())}, "not UTF-8", id="not-utf8"),
        pytest.param(
            {"token": b64(TOKEN + "\r\nX-Injected: 1")}, "sent as a header", id="header-injection"
        ),
        pytest.param({"token": b64("two words")}, "whitespace", id="inner-space"),
        pytest.param({"token": b64("t\u00f6ken")}, "non-ASCII", id="non-ascii"),
        pytest.param(
            {"token": b64(TOKEN), "caBundle": "%%%"}, "data.caBundle is not base64", id="ca-b64"
        ),
        pytest.param(
            {"token": b64(TOKEN), "caBundle": b64("not a certificate")},
            "no usable PEM certificate",
            id="ca-not-pem",
        ),
    ],
)
def test_unusable_secrets_are_refused_without_showing_the_token(
    data: dict[str, str], words: str
) -> None:
    with pytest.raises(MemberConfigError) as caught:
        member_credentials(secret(**data), "Secret karmada-cluster/m")
    assert caught.value.reason == INVALID_SECRET
    assert str(caught.value).startswith("Secret karmada-cluster/m")
    assert words in str(caught.value)
    assert TOKEN not in str(caught.value)
    assert "c2VjcmV0LXRva2Vu" not in str(caught.value)


def test_a_secret_whose_data_is_not_a_map_is_refused() -> None:
    with pytest.raises(MemberConfigError, match="data is not a map") as caught:
        member_credentials({"data": ["token"]}, "S")
    assert caught.value.reason == INVALID_SECRET


# -- a Cluster and its Secret on a fake host -------------------------------------------------


def cluster(name: str = "m", **spec: Any) -> dict[str, Any]:
    defaults = {
        "apiEndpoint": "10.0.0.1:6443",
        "secretRef": {"namespace": "karmada-cluster", "name": name},
    }
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {**defaults, **spec},
    }


class Reads:
    """Records the Secrets asked of the host."""

    def __init__(self, fake: FakeClient) -> None:
        self.names: list[str] = []
        self._get = fake.get

        async def get(
            gvk: GVK, name: str, *, namespace: str | None = None, metadata_only: bool = False
        ) -> dict[str, Any]:
            if gvk == SECRET:
                self.names.append(f"{namespace}/{name}")
            return await self._get(gvk, name, namespace=namespace, metadata_only=metadata_only)

        fake.get = get  # type: ignore[assignment]


@pytest.fixture
def fake() -> FakeClient:
    fake = FakeClient()
    fake.install_crds(crd_paths())
    fake.seed(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "m",
                "namespace": "karmada-cluster",
                "ownerReferences": bound_to("m"),
            },
            "data": {"token": b64(TOKEN)},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "admin-token",
                "namespace": "kube-system",
                "ownerReferences": bound_to("m"),
            },
            "data": {"token": b64("cluster-admin")},
        },
    )
    return fake


class Connector:
    """What ``ClusterProvider`` does with one Cluster: the Secret of the cluster namespace its
    secretRef names (``secret_name``; the provider's informer holds them), the connection the
    Cluster and that Secret make (``member_connection``), the config it loads (``member_config``).
    """

    def __init__(self, fake: FakeClient, tmp_path: Path, **options: Any) -> None:
        self.fake, self.tmp_path = fake, tmp_path
        self.options = MemberOptions(**options)
        self.kubeconfigs: dict[str, Path] = {}

    async def ensure(self, cluster: dict[str, Any]) -> ClusterConfig:
        name = str(cluster["metadata"]["name"])
        try:
            connection = member_connection(
                cluster, await self._secret(cluster), self.options, self.kubeconfigs
            )
            return await member_config(name, connection.source, temp_dir=self.tmp_path)
        except MemberConfigError as error:  # as the provider words it
            raise MemberConfigError(error.reason, f"cluster {name}: {error}") from None

    async def _secret(self, cluster: dict[str, Any]) -> dict[str, Any] | None:
        name = secret_name(cluster)
        if name is None:
            return None
        try:
            return await self.fake.get(SECRET, name, namespace=self.options.cluster_namespace)
        except NotFound:
            return None


def connector(fake: FakeClient, tmp_path: Path, **options: Any) -> Connector:
    return Connector(fake, tmp_path, **options)


@asyncio
async def test_a_host_port_endpoint_is_reached_over_https(fake: FakeClient, tmp_path: Path) -> None:
    members = connector(fake, tmp_path)
    member = await members.ensure(cluster())
    assert member.host == "https://10.0.0.1:6443"


@asyncio
async def test_a_foreign_secret_is_refused_and_never_read(fake: FakeClient, tmp_path: Path) -> None:
    reads = Reads(fake)
    members = connector(fake, tmp_path)
    stolen = cluster(secretRef={"namespace": "kube-system", "name": "admin-token"})
    with pytest.raises(MemberConfigError) as caught:
        await members.ensure(stolen)
    assert caught.value.reason == SECRET_REF_NOT_ALLOWED
    assert str(caught.value).startswith("cluster m: spec.secretRef names Secret kube-system/")
    assert all(name.startswith("karmada-cluster/") for name in reads.names), reads.names


@asyncio
async def test_an_http_endpoint_is_refused_unless_allowed(fake: FakeClient, tmp_path: Path) -> None:
    members = connector(fake, tmp_path)
    with pytest.raises(MemberConfigError) as caught:
        await members.ensure(cluster(apiEndpoint="http://127.0.0.1:8080"))
    assert caught.value.reason == INSECURE_ENDPOINT
    allowed = connector(fake, tmp_path, allow_insecure_endpoints=True)
    member = await allowed.ensure(cluster(apiEndpoint="http://127.0.0.1:8080"))
    assert member.host == "http://127.0.0.1:8080"


@asyncio
async def test_an_impersonator_secret_elsewhere_is_refused(
    fake: FakeClient, tmp_path: Path
) -> None:
    members = connector(fake, tmp_path)
    impersonator = {"namespace": "kube-system", "name": "admin-token"}
    with pytest.raises(MemberConfigError) as caught:
        await members.ensure(cluster(impersonatorSecretRef=impersonator))
    assert caught.value.reason == SECRET_REF_NOT_ALLOWED
    assert "spec.impersonatorSecretRef" in str(caught.value)


@asyncio
async def test_secrets_are_read_from_the_configured_cluster_namespace(
    fake: FakeClient, tmp_path: Path
) -> None:
    reads = Reads(fake)
    members = connector(fake, tmp_path, cluster_namespace="kube-system")
    reference = {"namespace": "kube-system", "name": "admin-token"}
    await members.ensure(cluster(secretRef=reference))
    assert reads.names == ["kube-system/admin-token"]
    with pytest.raises(MemberConfigError, match="read only from namespace kube-system"):
        await members.ensure(cluster())


@asyncio
async def test_a_missing_secret_or_reference_is_a_config_error(
    fake: FakeClient, tmp_path: Path
) -> None:
    members = connector(fake, tmp_path)
    with pytest.raises(MemberConfigError) as caught:
        await members.ensure(cluster("ghost"))
    assert caught.value.reason == SECRET_NOT_FOUND
    assert "Secret karmada-cluster/ghost not found" in str(caught.value)
    no_reference = cluster()
    del no_reference["spec"]["secretRef"]
    with pytest.raises(MemberConfigError, match=r"spec\.secretRef is missing") as caught:
        await members.ensure(no_reference)
    assert caught.value.reason == SECRET_REF_NOT_ALLOWED


@asyncio
async def test_a_non_utf8_token_is_a_config_error(fake: FakeClient, tmp_path: Path) -> None:
    broken = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "m", "namespace": "karmada-cluster", "ownerReferences": bound_to("m")},
        "data": {"token": b64(b"\xff" + TOKEN.encode())},
    }
    await fake.update(broken)
    with pytest.raises(MemberConfigError) as caught:
        await connector(fake, tmp_path).ensure(cluster())
    assert caught.value.reason == INVALID_SECRET
    assert str(caught.value) == "cluster m: Secret karmada-cluster/m: data.token is not UTF-8 text"


@asyncio
async def test_an_unreadable_member_kubeconfig_is_a_config_error(
    fake: FakeClient, tmp_path: Path
) -> None:
    members = connector(fake, tmp_path)
    members.kubeconfigs["m"] = tmp_path / "absent.kubeconfig"
    with pytest.raises(MemberConfigError) as caught:
        await members.ensure(cluster())
    assert caught.value.reason == INVALID_KUBECONFIG
    assert "absent.kubeconfig" in str(caught.value)


# -- a Cluster's Secret is bound to it ----------------------------------------------------------


async def _secret_of(fake: FakeClient, name: str, owners: list[dict[str, Any]] | None) -> None:
    secret = await fake.get(SECRET, name, namespace="karmada-cluster")
    secret["metadata"].pop("ownerReferences", None)
    if owners is not None:
        secret["metadata"]["ownerReferences"] = owners
    await fake.update(secret)


@asyncio
async def test_another_clusters_secret_is_refused_and_its_token_never_sent(
    fake: FakeClient, tmp_path: Path
) -> None:
    """#26 item 6: a Cluster pointing at an endpoint of its writer's choosing and at member m's
    Secret gets no connection (its token would go to that endpoint)."""
    members = connector(fake, tmp_path)
    thief = cluster(
        "thief",
        apiEndpoint="https://attacker.example",
        secretRef={"namespace": "karmada-cluster", "name": "m"},
    )
    with pytest.raises(MemberConfigError) as caught:
        await members.ensure(thief)
    assert caught.value.reason == SECRET_NOT_BOUND
    assert "Secret karmada-cluster/m is bound to Cluster 'm', not to Cluster thief" in str(
        caught.value
    )


@pytest.mark.parametrize(
    ("owners", "words"),
    [
        pytest.param(None, "has no controller ownerReference", id="no-owner"),
        pytest.param([], "has no controller ownerReference", id="empty-owners"),
        pytest.param(
            bound_to("m", controller=False), "has no controller ownerReference", id="not-controller"
        ),
        pytest.param(
            bound_to("m", kind="Secret"), "has no controller ownerReference", id="other-kind"
        ),
        pytest.param(
            bound_to("m", apiVersion="fake.karmada.io/v1alpha1"),
            "has no controller ownerReference",
            id="other-group",
        ),
        pytest.param(bound_to("other"), "bound to Cluster 'other', not", id="other-cluster"),
        pytest.param(bound_to("m", uid="uid-old"), "earlier Cluster m", id="earlier-uid"),
    ],
)
@asyncio
async def test_a_secret_not_bound_to_its_cluster_is_refused_saying_how_to_bind(
    fake: FakeClient, tmp_path: Path, owners: list[dict[str, Any]] | None, words: str
) -> None:
    await _secret_of(fake, "m", owners)
    members = connector(fake, tmp_path)
    with pytest.raises(MemberConfigError) as caught:
        await members.ensure(cluster())
    assert caught.value.reason == SECRET_NOT_BOUND
    assert words in str(caught.value)


# -- the controller-manager's flags ------------------------------------------------------------


def test_member_flags_default_to_https_only_and_karmadas_cluster_namespace() -> None:
    args = _parser().parse_args(["controller-manager"])
    assert MemberOptions.from_args(args) == MemberOptions(
        "karmada-cluster", allow_insecure_endpoints=False
    )
    assert _parser().parse_args(["join", "m", "--cluster-kubeconfig", "k"]).cluster_namespace == (
        "karmada-cluster"
    )


def test_member_flags_set_the_options() -> None:
    argv = ["controller-manager", "--cluster-namespace=fleet", "--allow-insecure-member-endpoints"]
    assert MemberOptions.from_args(_parser().parse_args(argv)) == MemberOptions("fleet", True)
