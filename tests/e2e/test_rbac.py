"""End to end under least privilege: the controller-manager as deploy/'s ServiceAccount, and as
the Helm chart's (charts/reconcile rendered by helm: the same grants must suffice).

deploy/controller-manager's namespaces, ServiceAccount and RBAC are applied unchanged to the testenv
host with kubectl; the controller-manager gets a token for the ServiceAccount from the TokenRequest
API and runs the propagation path with it (leader election on, as deploy/ runs it): a 2:1 split, an
OverridePolicy, member status aggregated back onto the template, template deletion. Members are
reached with their own Secrets, which the join wrote into the cluster namespace.

testenv runs no kube-controller-manager, so this test plays its clusterrole-aggregation controller
(the templates ClusterRole gets the rules of the labelled ones) as it plays the Deployment
controller (member status). Any request the apiserver refuses is logged by the controllers as a
``403 Forbidden``: the test fails if any was, listing them (each names the verb and resource).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import structlog

from controllers.api import CLUSTER_GVK, KARMADA_CLUSTER_NAMESPACE
from controllers.cluster import ClusterProvider
from controllers.cluster.connection import SECRET
from controllers.detector import binding_coordinates
from controllers.rbac import LEASE_NAME, SERVICE_ACCOUNT, aggregated_rules, granted
from controllers.sharding import ShardingOptions
from reconcile import GVK, Client, ClusterConfig, ManagerOptions, NotFound
from testenv import Environment, eventually
from testenv.binaries import find_helm
from tests.e2e.stack import (
    DEPLOYMENT,
    OVERRIDE,
    Stack,
    client_of,
    new_deployment,
    new_policy,
    running,
)

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.multicluster]

DEPLOY = Path(__file__).parents[2] / "deploy" / "controller-manager"
CHART = Path(__file__).parents[2] / "charts" / "reconcile"
APPLIED = ("cluster-namespace.yaml", "namespace.yaml", "serviceaccount.yaml", "rbac.yaml")
"""deploy/'s files that concern the identity, in an order that creates namespaces first."""
CLUSTER_ROLE = GVK("rbac.authorization.k8s.io", "v1", "ClusterRole")
CLUSTER_ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding")
ROLE = GVK("rbac.authorization.k8s.io", "v1", "Role")
ROLE_BINDING = GVK("rbac.authorization.k8s.io", "v1", "RoleBinding")
SERVICE_ACCOUNT_GVK = GVK("", "v1", "ServiceAccount")
TOKEN_SECONDS = 3600
USER = f"system:serviceaccount:{SERVICE_ACCOUNT[0]}:{SERVICE_ACCOUNT[1]}"


@pytest.mark.parametrize(
    ("source", "sharded"),
    [("deploy", False), ("deploy", True), ("chart", False)],
    ids=["one-replica", "sharded", "chart"],
)
async def test_propagation_under_deploys_rbac(
    joined: Environment, namespace: str, source: str, sharded: bool
) -> None:
    # deploy/ runs the controller-manager sharded (--shards=auto): its shard Lease, the
    # sharder's Lease cache and label patches are requests too. (It labels every template of
    # the shared host; the labels are never sent to members, and its Lease is released.)
    sharding = ShardingOptions(name="rbac-0", namespace=SERVICE_ACCOUNT[0]) if sharded else None
    await (_apply_chart(joined) if source == "chart" else _apply_deploy(joined))
    async with await client_of(joined.host) as admin:
        await _aggregate_cluster_roles(admin)
        config = await _service_account_config(joined, admin)
    options = ManagerOptions(
        metrics_bind_address="0",
        leader_election=True,
        leader_election_id=LEASE_NAME,
        leader_election_namespace=SERVICE_ACCOUNT[0],
    )
    with _no_refusals():
        async with running(
            joined, namespace, config=config, options=options, sharding=sharding
        ) as stack:
            assert await _whoami(stack) == USER
            await _wait_detector_watches(stack, DEPLOYMENT)
            await _propagate(stack)
            await _only_permitted_kinds_watched(stack)


# --- setting up the identity ----------------------------------------------------------------


async def _apply_deploy(env: Environment) -> None:
    arguments = [f"--filename={DEPLOY / name}" for name in APPLIED]
    await env.host.kubectl("apply", "--server-side", "--force-conflicts", *arguments)


async def _apply_chart(env: Environment) -> None:
    """The chart's identity (release ``reconcile``: the same names as deploy/'s, so its objects
    replace those), rendered by helm and applied with kubectl."""
    templates = ("serviceaccount.yaml", "cluster-namespace.yaml", "rbac.yaml")
    shown = [f"--show-only=templates/{name}" for name in templates]
    rendered = await anyio.run_process(
        [str(find_helm()), "template", "reconcile", str(CHART), f"--namespace={SERVICE_ACCOUNT[0]}",
         *shown]
    )  # fmt: skip
    await env.host.kubectl("create", "namespace", SERVICE_ACCOUNT[0], check=False)
    await env.host.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", input=rendered.stdout
    )


async def _aggregate_cluster_roles(admin: Client) -> None:
    """What kube-controller-manager's clusterrole-aggregation controller does, once."""
    roles = (await admin.list(CLUSTER_ROLE))["items"]
    for role in roles:
        if role.get("aggregationRule") is None:
            continue
        rules = aggregated_rules(role, roles)
        if rules != (role.get("rules") or []):
            await admin.update({**role, "rules": rules})


async def _service_account_config(env: Environment, admin: Client) -> ClusterConfig:
    """A kubeconfig of the host for the ServiceAccount, with a TokenRequest token."""
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_SECONDS},
    }
    namespace, name = SERVICE_ACCOUNT
    answer = await admin.create_subresource(
        SERVICE_ACCOUNT_GVK, name, "token", request, namespace=namespace
    )
    ca = base64.b64encode(env.host.apiserver.serving_ca.cert_pem).decode()
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "host", "cluster": {"server": env.host.url, "certificate-authority-data": ca}}
        ],
        "users": [{"name": name, "user": {"token": answer["status"]["token"]}}],
        "contexts": [{"name": "host", "context": {"cluster": "host", "user": name}}],
        "current-context": "host",
    }
    scratch = env.host.directory / "service-account"
    return await ClusterConfig.from_kubeconfig_dict(document, temp_dir=scratch)


@contextmanager
def _no_refusals() -> Iterator[None]:
    """Fail, naming them, if the controllers logged requests the apiserver refused (403), also
    when the block failed first (a refusal is the likely cause: it is the better message)."""
    with structlog.testing.capture_logs() as logs:
        try:
            yield
        finally:
            refusals = sorted({str(e.get("error", e)) for e in logs if _refused_by_rbac(str(e))})
            if refusals:
                raise AssertionError("refused requests:\n" + "\n".join(refusals))


async def _whoami(stack: Stack) -> str:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    answer = await stack.context.manager.api_reader.create(review)
    return str(answer["status"]["userInfo"]["username"])


async def _wait_detector_watches(stack: Stack, gvk: GVK) -> None:
    """Wait for the detector's first discovery round to watch ``gvk`` (RBAC permitting)."""

    async def watched() -> bool:
        return any(scope.gvk == gvk for scope in stack.context.manager.cache.informers())

    try:
        await eventually(watched, timeout=30)
    except AssertionError:
        raise AssertionError(
            f"the detector does not watch {gvk.kind}: RBAC does not allow it?"
        ) from None


# --- the propagation path -------------------------------------------------------------------


def _override(namespace: str, target: str) -> dict[str, Any]:
    return {
        "apiVersion": OVERRIDE.api_version,
        "kind": OVERRIDE.kind,
        "metadata": {"name": target, "namespace": namespace},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": target}],
            "overrideRules": [
                {
                    "targetCluster": {"clusterNames": ["member2"]},
                    "overriders": {
                        "labelsOverrider": [{"operator": "add", "value": {"tier": "edge"}}]
                    },
                }
            ],
        },
    }


async def _propagate(stack: Stack) -> None:
    ns, name = stack.namespace, "web"
    await stack.host.create(_override(ns, name))
    await stack.host.create(new_deployment(name, ns, 3))
    await stack.host.create(new_policy(name, ns, name))
    await stack.wait_replicas(name, {"member1": 2, "member2": 1})

    async def overridden() -> bool:
        edge = await stack.member_deployment("member2", name)
        return edge is not None and edge["metadata"]["labels"].get("tier") == "edge"

    await eventually(overridden, timeout=60)
    member1 = await stack.member_deployment("member1", name)
    assert member1 is not None
    assert "tier" not in member1["metadata"]["labels"]

    await stack.report_ready(name)

    async def aggregated() -> bool:
        template = await stack.host.get(DEPLOYMENT, name, namespace=ns)
        return (template.get("status") or {}).get("readyReplicas") == 3

    await eventually(aggregated, timeout=60)

    template = await stack.host.get(DEPLOYMENT, name, namespace=ns)
    await stack.host.delete(DEPLOYMENT, name, namespace=ns)
    await stack.wait_replicas(name, {"member1": None, "member2": None})
    gvk, _, binding = binding_coordinates(template)

    async def binding_gone() -> bool:
        try:
            await stack.host.get(gvk, binding, namespace=ns)
        except NotFound:
            return True
        return False

    await eventually(binding_gone, timeout=60)


async def _only_permitted_kinds_watched(stack: Stack) -> None:
    """Every informer of the host is one the ServiceAccount may list and watch, and all have
    synced (what /readyz reports): none waits on a 403."""
    manager = stack.context.manager

    async def synced() -> bool:
        return manager.cache.has_synced()

    await eventually(synced, timeout=30)
    rbac = []
    for kind in (CLUSTER_ROLE, CLUSTER_ROLE_BINDING, ROLE, ROLE_BINDING):
        rbac += (await stack.host.list(kind))["items"]
    allowed = {(g.namespace, g.group, g.resource, g.verb) for g in granted(rbac) if not g.name}
    watched = set()
    # The member provider's own informers: the Clusters, and the Secrets of the cluster namespace.
    provider = stack.context.members.provider
    assert isinstance(provider, ClusterProvider)
    assert provider.secrets.has_synced()
    assert provider.clusters.has_synced()
    credentials = [(SECRET, KARMADA_CLUSTER_NAMESPACE), (CLUSTER_GVK, "")]
    scopes = [(scope.gvk, scope.namespace) for scope in manager.cache.informers()]
    for gvk, namespace in [*scopes, *credentials]:
        resource = await manager.api_reader.resource_for(gvk)
        if not namespace:
            watched.add(resource.plural)
        for verb in ("list", "watch"):
            wanted = (gvk.group, resource.plural, verb)
            assert ("", *wanted) in allowed or (namespace, *wanted) in allowed, (gvk, namespace)
    assert {"deployments", "propagationpolicies", "works"} <= watched
    assert not {"secrets", "roles", "clusterroles", "mutatingwebhookconfigurations"} & watched
    # No Secret informer at all in the manager's cache: the detector was not allowed to watch them.
    assert not [s for s in manager.cache.informers() if s.gvk == SECRET]


def _refused_by_rbac(line: str) -> bool:
    # Other tests' namespaces may still be terminating, and the NamespaceLifecycle admission
    # plugin refuses Events there with 403 too: that is not a missing permission.
    return "403 Forbidden" in line and "because it is being terminated" not in line
