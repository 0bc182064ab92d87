"""ClusterStatusController probes each member and reports it in its Cluster's status.

Every ``update_frequency`` seconds (default 10): GET ``/readyz`` on the member (``/healthz`` when
the server has no readyz), then the condition Ready is True/ClusterReady, False/ClusterNotReady
(an answer other than 200) or False/ClusterNotReachable (no answer). A change of health flips the
condition only after it persisted for the success threshold (to True) or the failure threshold
(to False), 30 s each by default (Karmada's debouncing), so one lost probe does not evict
workloads. A Cluster without usable, allowed connection details is Ready=False at once, with the
reason the member provider refused it for (InsecureEndpoint, SecretRefNotAllowed, InvalidSecret,
...: ``Members.problem``), as Karmada sets StatusCollectionFailed without waiting when it cannot
build a client; it is looked at again every ``update_frequency`` and whenever the provider's
verdict changes (``Members.changes``: the Cluster or a Secret it references changed). A Cluster
the provider has not handled yet is looked at again when it has. The three durations are
``ClusterStatusOptions`` (Karmada's ``--cluster-status-update-frequency``,
``--cluster-success-threshold`` and ``--cluster-failure-threshold``). While ready, the status also
carries the member's kubernetesVersion, apiEnablements (its discovery), nodeSummary and
resourceSummary (allocatable from nodes, allocated from the requests of pods that are not
finished). The status is written only when it changed; every probe also renews the member's
Lease in the cluster namespace (``lease``), the heartbeat the cluster controller's health monitor
reads. Only the Clusters of ``Members.scope`` are reconciled (the controller-manager's: every
Push Cluster): a Pull Cluster's status and Lease are its agent's to write, as Karmada's
controller-manager runs its cluster-status controller with a predicate for Push Clusters only and
karmada-agent runs one for its own Cluster. The condition ``TokenExpiring`` says when the
member's token lapses, True (and a Warning Event) once that is near or past (``expiry``), absent
while the expiry is unknown.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Self

import anyio
import orjson

from controllers.api import (
    CLUSTER_GVK,
    CLUSTER_NOT_REACHABLE_REASON,
    CLUSTER_NOT_READY_REASON,
    CLUSTER_READY_REASON,
    KARMADA_CLUSTER_NAMESPACE,
    READY_CONDITION,
    cluster_spec,
    cluster_status,
    is_cluster_ready,
)
from controllers.cluster.controller import MEMBER_SECRETS
from controllers.cluster.expiry import TOKEN_EXPIRING_CONDITION, ExpiryVerdict, expiry_verdict
from controllers.cluster.lease import renew_cluster_lease
from controllers.cluster.members import MemberProvider, Members
from controllers.cluster.taints import NOT_READY_TAINT, UNREACHABLE_TAINT, has_taint
from controllers.duration import parse_duration
from controllers.flags import FlagSet
from controllers.rbac import Permissions, Rule, cache
from reconcile import (
    GVK,
    Client,
    Event,
    Manager,
    NotFound,
    Quantity,
    Request,
    Result,
    controller_managed_by,
    deep_copy,
    get_condition,
    remove_condition,
    set_condition,
)

if TYPE_CHECKING:
    # Only for the setup's signature: Context imports this package's options.
    from controllers.context import Context

__all__ = [
    "PERMISSIONS",
    "ClusterStatusController",
    "ClusterStatusOptions",
    "Health",
    "clusters_ready",
    "probe",
    "setup",
    "setup_cluster_status_controller",
]

NODE: Final = GVK("", "v1", "Node")
POD: Final = GVK("", "v1", "Pod")
DEFAULT_UPDATE_FREQUENCY: Final = 10.0
DEFAULT_THRESHOLD: Final = 30.0
PROBE_TIMEOUT: Final = 5.0
PERMISSIONS: Final = Permissions(
    rules=(
        cache("cluster.karmada.io", "clusters"),
        Rule(("cluster.karmada.io",), ("clusters/status",), ("update",), "Ready and member facts"),
        MEMBER_SECRETS,
        Rule(
            ("coordination.k8s.io",),
            ("leases",),
            ("get", "create", "update"),
            "each member's heartbeat Lease, renewed at every probe; cluster namespace only",
            namespace=KARMADA_CLUSTER_NAMESPACE,
        ),
    )
)
"""What the cluster-status controller does on the host; members are probed with their own
credentials (see controllers.rbac)."""


@dataclass(frozen=True)
class ClusterStatusOptions:
    """How often members are probed, and how long a change of health must last to show.

    All in seconds. ``failure_threshold`` delays Ready True → False, ``success_threshold``
    False → True; 0 flips at the first probe that disagrees.

    Raises:
        ValueError: a duration is negative, or the update frequency is not positive.
    """

    update_frequency: float = DEFAULT_UPDATE_FREQUENCY
    failure_threshold: float = DEFAULT_THRESHOLD
    success_threshold: float = DEFAULT_THRESHOLD

    def __post_init__(self) -> None:
        if self.update_frequency <= 0:
            raise ValueError(f"update frequency must be positive, got {self.update_frequency}")
        if self.failure_threshold < 0 or self.success_threshold < 0:
            raise ValueError("cluster success and failure thresholds must not be negative")

    @classmethod
    def add_flags(cls, flags: FlagSet) -> None:
        """Register ``--cluster-status-update-frequency`` and the two thresholds."""
        defaults = cls()
        flags.add_argument(
            "--cluster-status-update-frequency",
            type=parse_duration,
            default=defaults.update_frequency,
            help="how often each member is probed (default 10s)",
        )
        flags.add_argument(
            "--cluster-failure-threshold",
            type=parse_duration,
            default=defaults.failure_threshold,
            help="how long a member must fail its probes before it is not Ready (default 30s)",
        )
        flags.add_argument(
            "--cluster-success-threshold",
            type=parse_duration,
            default=defaults.success_threshold,
            help="how long a member must pass its probes before it is Ready again (default 30s)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Self:
        """The options ``add_flags``' flags set.

        Raises:
            ValueError: as the constructor.
        """
        return cls(
            update_frequency=args.cluster_status_update_frequency,
            failure_threshold=args.cluster_failure_threshold,
            success_threshold=args.cluster_success_threshold,
        )


@dataclass(frozen=True)
class Health:
    """One probe's verdict: the Ready condition it argues for."""

    status: str
    reason: str
    message: str


async def probe(client: Client) -> Health:
    """Probe a member's /readyz (or /healthz where readyz does not exist)."""
    try:
        code, body = await client.get_path("/readyz", timeout=PROBE_TIMEOUT)
        if code == 404:
            code, body = await client.get_path("/healthz", timeout=PROBE_TIMEOUT)
    except Exception as error:  # every transport failure means the same: not reachable
        return Health("False", CLUSTER_NOT_REACHABLE_REASON, f"cluster is not reachable: {error}")
    if code != 200:
        text = body.decode(errors="replace").strip()[:200]
        return Health("False", CLUSTER_NOT_READY_REASON, f"cluster is not ready: {code} {text}")
    return Health("True", CLUSTER_READY_REASON, "cluster is healthy and ready to accept workloads")


@dataclass
class _Observation:
    health: Health
    since: float


class ClusterStatusController:
    """Reconciles a Cluster's status from probes of its member; probes again periodically."""

    def __init__(
        self,
        manager: Manager,
        members: Members[MemberProvider],
        options: ClusterStatusOptions | None = None,
    ) -> None:
        self.client = manager.client
        self.api_reader = manager.api_reader
        self.members = members
        self.options = options or ClusterStatusOptions()
        self.recorder = manager.event_recorder("reconcile-cluster-status")
        self._observed: dict[str, _Observation] = {}

    def served(self, event: Event) -> bool:
        """The watch's predicate: events of Clusters in this process's scope (a Cluster
        switched out of it is enqueued once more by ``Members.changes``, its disengagement)."""
        return self.members.scope.serves(event.obj)

    async def reconcile(self, request: Request) -> Result | None:
        """Probe the member and update the Cluster's status (served Clusters only)."""
        try:
            cluster = await self.client.get(CLUSTER_GVK, request.name)
        except NotFound:
            self._observed.pop(request.name, None)
            return None
        if not self.members.scope.serves(cluster):
            # Another process's (a Pull Cluster's agent): its status and Lease are left alone.
            self._observed.pop(request.name, None)
            return None
        member, problem = self.members.get(request.name), self.members.problem(request.name)
        if problem is not None:
            # Not a probe that may pass next time: say it at once, no debouncing.
            health = verdict = Health("False", problem.reason, str(problem))
            self._observe(request.name, health)
        elif member is None:
            return None  # not handled by the provider yet: its verdict enqueues the Cluster
        else:
            health = await probe(member.api_reader)
            verdict = self._debounced(request.name, cluster, health)
        # A deep copy: conditions are changed in place and compared with the original below.
        status: dict[str, Any] = deep_copy(dict(cluster_status(cluster)))
        if health.status == "True":
            status.update(await self._details(request.name))
        updated = {**cluster, "status": status}
        self._set_ready(updated, verdict)
        expiring = self._token_expiry(updated, request.name)
        if updated["status"] != cluster.get("status"):
            await self.client.update_status(updated)
        if expiring is not None:  # after the write: a failed one comes back to say it again
            self.recorder.event(updated, "Warning", expiring.reason, expiring.message)
        namespace = self.members.options.cluster_namespace
        await renew_cluster_lease(self.api_reader, request.name, namespace)
        return Result(requeue_after=self.options.update_frequency)

    def _token_expiry(self, cluster: dict[str, Any], name: str) -> ExpiryVerdict | None:
        """Set TokenExpiring from the member's token (remove it when the expiry is unknown);
        the verdict when the condition just turned True (or to another True reason)."""
        lifetime = self.members.token_lifetime(name)
        if lifetime is None:
            remove_condition(cluster, TOKEN_EXPIRING_CONDITION)
            return None
        before = dict(get_condition(cluster, TOKEN_EXPIRING_CONDITION) or {})
        verdict = expiry_verdict(lifetime, time.time())  # JWT times are wall-clock seconds
        set_condition(
            cluster,
            TOKEN_EXPIRING_CONDITION,
            verdict.status,  # type: ignore[arg-type]
            verdict.reason,
            verdict.message,
        )
        turned = (before.get("status"), before.get("reason")) != (verdict.status, verdict.reason)
        return verdict if turned and verdict.status == "True" else None

    def _observe(self, name: str, health: Health) -> _Observation:
        """Record a verdict; ``since`` is when the status last changed."""
        seen = self._observed.get(name)
        if seen is None or seen.health.status != health.status:
            seen = self._observed[name] = _Observation(health, anyio.current_time())
        seen.health = health
        return seen

    def _debounced(self, name: str, cluster: dict[str, Any], health: Health) -> Health:
        current = get_condition(cluster, READY_CONDITION)
        seen = self._observe(name, health)
        if current is None or current.get("status") == health.status:
            return health  # first report, or no flip: say it at once
        if anyio.current_time() - seen.since >= self._threshold(health):
            return health
        # Not persisted long enough to flip: keep the old verdict (with its old words).
        return Health(
            str(current.get("status")), str(current.get("reason")), str(current.get("message"))
        )

    def _threshold(self, health: Health) -> float:
        if health.status == "True":
            return self.options.success_threshold
        return self.options.failure_threshold

    def _set_ready(self, cluster: dict[str, Any], health: Health) -> None:
        set_condition(
            cluster,
            READY_CONDITION,
            health.status,  # type: ignore[arg-type]
            health.reason,
            health.message,
        )

    async def _details(self, name: str) -> dict[str, Any]:
        member = self.members.get(name)
        if member is None:
            return {}
        client = member.api_reader
        details: dict[str, Any] = {}
        code, body = await client.get_path("/version", timeout=PROBE_TIMEOUT)
        if code == 200:
            details["kubernetesVersion"] = orjson.loads(body).get("gitVersion", "")
        details["apiEnablements"] = await _api_enablements(client)
        nodes = (await client.list(NODE))["items"]
        running = "status.phase!=Succeeded,status.phase!=Failed"
        pods = (await client.list(POD, field_selector=running))["items"]
        details["nodeSummary"] = _node_summary(nodes)
        details["resourceSummary"] = _resource_summary(nodes, pods)
        return details


async def _api_enablements(client: Client) -> list[dict[str, Any]]:
    groups: list[str] = []
    code, body = await client.get_path("/api")
    if code == 200:
        groups += list(orjson.loads(body).get("versions", []))
    code, body = await client.get_path("/apis")
    if code == 200:
        for group in orjson.loads(body).get("groups", []):
            groups += [v["groupVersion"] for v in group.get("versions", [])]
    enablements = []
    for group_version in sorted(groups):
        path = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        code, body = await client.get_path(path)
        if code != 200:
            continue
        resources = [
            {"name": r["name"], "kind": r["kind"]}
            for r in orjson.loads(body).get("resources", [])
            if "/" not in r["name"]
        ]
        enablements.append({"groupVersion": group_version, "resources": resources})
    return enablements


def _ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _node_summary(nodes: list[dict[str, Any]]) -> dict[str, int]:
    return {"totalNum": len(nodes), "readyNum": sum(1 for n in nodes if _ready(n))}


def _sum(quantities: Iterable[dict[str, Any]]) -> dict[str, str]:
    totals: dict[str, Quantity] = {}
    for resources in quantities:
        for name, value in (resources or {}).items():
            amount = Quantity.parse(str(value))
            totals[name] = totals[name] + amount if name in totals else amount
    return {name: str(value) for name, value in sorted(totals.items())}


def _pod_requests(pod: dict[str, Any]) -> dict[str, Any]:
    containers = pod.get("spec", {}).get("containers") or []
    requests = _sum(c.get("resources", {}).get("requests") or {} for c in containers)
    return {**requests, "pods": "1"}


def _resource_summary(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> dict[str, Any]:
    allocatable = _sum(n.get("status", {}).get("allocatable") or {} for n in nodes)
    allocated = _sum(_pod_requests(p) for p in pods if p.get("spec", {}).get("nodeName"))
    return {"allocatable": allocatable, "allocated": allocated}


def setup_cluster_status_controller(
    manager: Manager, members: Members[MemberProvider], options: ClusterStatusOptions | None = None
) -> ClusterStatusController:
    """Register the cluster status controller with ``manager`` (default options: Karmada's),
    and have ``members`` served."""
    reconciler = ClusterStatusController(manager, members, options)
    builder = controller_managed_by(manager).for_(CLUSTER_GVK, reconciler.served)
    builder.named("cluster-status")
    builder.watches(members.changes()).complete(reconciler)
    return reconciler


def setup(context: Context) -> None:
    """Set up the cluster status controller (the controller-manager's entry point)."""
    setup_cluster_status_controller(context.manager, context.members, context.cluster_status)


def cluster_schedulable(cluster: Mapping[str, Any]) -> bool:
    """Whether ``cluster`` is Ready, lists the APIs it serves and has lost its not-ready and
    unreachable taints: only then does the scheduler consider it."""
    if not is_cluster_ready(cluster) or not cluster_status(cluster).get("apiEnablements"):
        return False
    taints = cluster_spec(cluster).get("taints") or []
    return not (has_taint(taints, NOT_READY_TAINT) or has_taint(taints, UNREACHABLE_TAINT))


async def clusters_ready(host: Client, names: Iterable[str]) -> bool:
    """Whether each named Cluster is schedulable (``cluster_schedulable``): a Divided binding
    is not spread again once scheduled, so what is created before would miss one."""
    for name in names:
        try:
            cluster = await host.get(CLUSTER_GVK, name)
        except NotFound:
            return False
        if not cluster_schedulable(cluster):
            return False
    return True
