"""Manager runs everything a controller process needs, in a safe order, and stops it in reverse.

Start order, as controller-runtime's runnable groups: the HTTP servers (metrics, health probes),
then the webhook server if anything registered webhooks (conversion webhooks must answer before
caches of converted kinds can sync), then every cluster's cache, waited for until synced; then,
on every replica, the runnables that need no leadership (the event broadcaster,
``add(..., leader_only=False)``, controllers built with ``need_leader_election=False``) and
every controller's warmup (its queue and sources, so standbys keep warm caches); then,
immediately or after winning the Lease when leader election is on, the leader-only runnables
(controllers' workers). A runnable added after start starts at once in its
group. ``/readyz`` stays failing until every informer requested so far has synced.

Metrics listen on loopback by default; bound beyond it they are served over HTTPS and only to
callers the cluster authenticates and authorizes for ``get /metrics`` (controller-runtime's
``SecureServing`` with ``filters.WithAuthenticationAndAuthorization``), unless ``metrics_secure``
is set to False explicitly. See ``ManagerOptions``.

Stop (``stop()``, SIGTERM or SIGINT through ``run_until_signalled``): leader-only runnables first
(controllers take no new key and let in-flight reconciles finish), then the others, then — with
``leader_election_release_on_cancel`` — the Lease is released, then the caches and the servers.
``graceful_shutdown_timeout`` bounds the whole stop: when it has passed, or on a second signal,
work still winding down is cancelled (``reconcile.grace``). A runnable that fails stops the manager
with its error. A lost Lease cancels the leader-only work at once and ``start()`` raises
``LeadershipLost``: the process should exit non-zero and be restarted (controller-runtime exits),
never keep reconciling without leadership. With leader election on, writes through the manager's
clients are refused while this process is not the leader, except from runnables that need no
leadership.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus
from prometheus_client import CollectorRegistry, Gauge

from reconcile.cache.cache import Cache
from reconcile.client.client import Client
from reconcile.client.config import ClusterConfig
from reconcile.cluster import CachedClient, Cluster
from reconcile.controller import DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT
from reconcile.grace import GracePeriod, current_grace
from reconcile.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost
from reconcile.metrics import register_cache_metrics, register_event_metrics
from reconcile.multicluster.aware import Aware
from reconcile.multicluster.provider import Provider
from reconcile.record.recorder import EventBroadcaster, EventRecorder
from reconcile.serving.certificate import DEFAULT_CERT_NAME, DEFAULT_KEY_NAME, ServingCertificate

if TYPE_CHECKING:
    # aiohttp.web (2 MiB, under the servers and webhooks) loads when a server is made, not here.
    from reconcile.serving.auth import FilterProvider
    from reconcile.serving.server import Check, HTTPServer
    from reconcile.webhook.server import WebhookServer

__all__ = ["Manager", "ManagerOptions", "NotLeader", "Runnable"]

log = structlog.get_logger("reconcile.manager")

DEFAULT_METRICS_BIND_ADDRESS: Final = "127.0.0.1:8080"
# Reviews of a scrape's token are not state changes: a standby must serve its metrics too.
_REVIEW_PATHS: Final = ("/tokenreviews", "/subjectaccessreviews")
# Whether the current task belongs to a runnable that needs leadership; the write guard lets the
# others write on a standby. Writes from outside any runnable are guarded.
_needs_leader: ContextVar[bool] = ContextVar("needs_leader", default=True)


class NotLeader(RuntimeError):
    """A write through the manager's client while another process holds the leader Lease."""


class Runnable(Protocol):
    """Anything the manager runs: blocks until cancelled, reports readiness through task_status."""

    async def run(self, *, task_status: TaskStatus[Any] = ...) -> None:
        """Run until cancelled."""
        ...


@dataclass(frozen=True)
class ManagerOptions:
    """How a manager runs. Every field documents its default."""

    metrics_bind_address: str = DEFAULT_METRICS_BIND_ADDRESS
    """Where /metrics listens: host:port, :port (every interface), or "0" to disable. Defaults
    to "127.0.0.1:8080" (loopback only; controller-runtime's default is ":8080")."""
    metrics_secure: bool | None = None
    """Serve /metrics over HTTPS behind ``metrics_filter_provider``. Defaults to None: secure when
    bound beyond loopback, plain HTTP on loopback. True: secure on any address. False: plain,
    unauthenticated HTTP on any address (controller-runtime's SecureServing=false), logged as a
    warning when bound beyond loopback — only for networks where every caller is trusted."""
    metrics_cert_dir: str | None = None
    """Directory holding the secure server's certificate and key, re-read when they change.
    Defaults to None: a self-signed certificate for localhost/127.0.0.1, made with the manager."""
    metrics_cert_name: str = DEFAULT_CERT_NAME
    """The certificate's file name in ``metrics_cert_dir``. Defaults to "tls.crt"."""
    metrics_key_name: str = DEFAULT_KEY_NAME
    """The key's file name in ``metrics_cert_dir``. Defaults to "tls.key"."""
    metrics_filter_provider: FilterProvider | None = field(default=None, compare=False)
    """Builds the secure server's filter from the manager's uncached client. Defaults to None:
    ``with_authentication_and_authorization`` (TokenReview + SubjectAccessReview against the
    manager's own cluster, which needs create on tokenreviews and subjectaccessreviews)."""
    health_probe_bind_address: str = "0"
    """Where /healthz and /readyz listen. Defaults to "0" (disabled)."""
    leader_election: bool = False
    """Run leader-only runnables only while holding the Lease. Defaults to False."""
    leader_election_id: str = ""
    """The Lease's name; required with leader_election."""
    leader_election_namespace: str = ""
    """The Lease's namespace. Defaults to the in-cluster namespace, else "default"."""
    leader_election_config: ClusterConfig | None = field(default=None, compare=False)
    """The cluster the Lease lives in (controller-runtime's ``LeaderElectionConfig``): an agent
    that reconciles another cluster elects its leader among its own replicas, in the cluster
    they run in. Defaults to None: the manager's own cluster."""
    lease_duration: float = 15.0
    """Seconds a Lease stays valid without renewal. Defaults to 15."""
    renew_deadline: float = 10.0
    """Seconds the leader keeps trying to renew before giving up. Defaults to 10."""
    retry_period: float = 2.0
    """Seconds between acquire/renew attempts. Defaults to 2."""
    leader_election_release_on_cancel: bool = False
    """Release the Lease once everything stopped, so a standby takes over at once instead of
    after ``lease_duration``. Defaults to False, as controller-runtime's
    ``LeaderElectionReleaseOnCancel``: only safe when the process exits right after the stop."""
    graceful_shutdown_timeout: float = DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT
    """Seconds the whole stop may take before what still winds down is cancelled. Defaults
    to 30."""
    namespace: str | None = None
    """Restrict the cache of the manager's own cluster (and of those ``add_cluster`` adds) to
    one namespace; engaged clusters are not restricted. Defaults to all namespaces."""
    compress_cache: bool = False
    """Keep every cluster's cached objects deflated against a dictionary of their kind (a
    tenth to a twentieth of their JSON, a few microseconds more per read and write; see
    ``reconcile.cache.store``). Defaults to False."""
    field_manager: str = "reconcile"
    """Field manager of writes through the manager's clients. Defaults to "reconcile"."""
    registry: CollectorRegistry | None = field(default=None, compare=False)
    """Where metrics are registered. Defaults to a registry of the manager's own."""
    webhook_server: WebhookServer | None = field(default=None, compare=False)
    """The server webhooks are registered on (controller-runtime's ``Options.WebhookServer``).
    Defaults to None: ``WebhookServer()`` (port 9443, controller-runtime's cert dir). Either runs
    only once ``Manager.webhook_server`` was asked for (a webhook registered)."""


@dataclass
class _Entry:
    runnable: Runnable | Callable[[], Awaitable[None]]
    leader_only: bool


_CLUSTER_STOP_TIMEOUT: Final = 10.0
"""Seconds ``disengage`` waits for a cluster's cache and clients to stop."""


@dataclass
class _ClusterTask:
    """The task running one cluster's cache: its scope (made before the task starts, so a
    removal cannot miss it) and whether it ended."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    stopped: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class _Engagement:
    owner: object  # the provider that engaged it; None: Manager.engage called directly
    config: ClusterConfig | None
    client: Client | None

    @property
    def owner_name(self) -> str:
        return "the manager's engage()" if self.owner is None else f"provider {self.owner!r}"

    def same(self, config: ClusterConfig | None, client: Client | None) -> bool:
        if client is not None or self.client is not None:
            return client is self.client
        return _same_config(self.config, config)


def _same_config(old: ClusterConfig | None, new: ClusterConfig | None) -> bool:
    """Whether two configs reach the same apiserver the same way (ClusterConfig has no __eq__)."""
    if old is None or new is None:
        return old is new
    if old is new:
        return True
    mine, theirs = dict(vars(old)), dict(vars(new))
    mine_credentials, their_credentials = mine.pop("credentials"), theirs.pop("credentials")
    return mine == theirs and vars(mine_credentials) == vars(their_credentials)


class _ProviderEngager:
    """The Engager one provider gets: the manager's, with the provider as the owner."""

    def __init__(self, manager: Manager, provider: Provider) -> None:
        self._manager, self._provider = manager, provider

    async def engage(
        self, name: str, config: ClusterConfig | None = None, *, client: Client | None = None
    ) -> None:
        await self._manager._engage(name, config, client, self._provider)

    async def disengage(self, name: str) -> None:
        manager = self._manager
        engagement = manager._engaged.get(name)
        if engagement is not None and engagement.owner is not self._provider:
            log.warning(
                "a provider disengaging a cluster it did not engage: ignored",
                cluster=name,
                provider=repr(self._provider),
                owner=engagement.owner_name,
            )
            return
        await manager.disengage(name)


def _in_cluster_namespace() -> str:
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    try:
        with open(path) as handle:
            return handle.read().strip() or "default"
    except OSError:
        return "default"


class Manager:
    """Clusters, controllers and other runnables of one process, started and stopped in order.

    Raises (on construction):
        ValueError: inconsistent options (leader election without an id, a bad metrics bind
            address); CertificateError (a ValueError) for an unusable ``metrics_cert_dir``.
    """

    def __init__(
        self,
        config: ClusterConfig | None = None,
        *,
        client: Client | None = None,
        options: ManagerOptions | None = None,
    ) -> None:
        self.options = options or ManagerOptions()
        if self.options.leader_election and not self.options.leader_election_id:
            raise ValueError("leader_election needs leader_election_id (the Lease's name)")
        # Bad lease timings fail here, not once running.
        self._election = self._election_config() if self.options.leader_election else None
        self.registry = self.options.registry or CollectorRegistry()
        self._config = config
        self.cluster = self._new_cluster("", config, client)
        self._lease_client: Client | None = None
        self.clusters: dict[str, Cluster] = {"": self.cluster}
        self.events = EventBroadcaster(self.cluster.api_reader)
        self._entries: list[_Entry] = []
        self.controller_names: set[str] = set()
        self._healthz: dict[str, Check] = {"ping": _ok}
        self._readyz: dict[str, Check] = {"caches": self._caches_synced}
        self._stop = anyio.Event()
        self._grace = GracePeriod()
        self._cluster_group: TaskGroup | None = None
        self._others: TaskGroup | None = None
        self._leaders: TaskGroup | None = None
        self._elector: LeaderElector | None = None
        self._cluster_tasks: dict[str, _ClusterTask] = {}
        self._providers: list[Provider] = []
        self._providers_started = False
        self._engaged: dict[str, _Engagement] = {}
        self._engaging = anyio.Lock()
        self._leading = not self.options.leader_election
        self._leader_gauge = Gauge(
            "leader_election_master_status",
            "Whether this process is the leader (1) or not (0).",
            ["name"],
            registry=self.registry,
        )
        register_cache_metrics(
            self.registry, lambda: [(n, c.cache) for n, c in list(self.clusters.items())]
        )
        register_event_metrics(self.registry, self.events)
        self.metrics_port: int | None = None
        self.metrics_certificate: ServingCertificate | None = None
        """The certificate /metrics serves while secure (``cert_pem`` to trust a generated one)."""
        self._metrics = self._metrics_server()  # bad metrics options fail here, not at start
        self.probe_port: int | None = None
        self.elected = anyio.Event()
        # Runs only once asked for, as controller-runtime's GetWebhookServer adds its server to
        # the runnables on first call: a manager given one but no webhooks listens nowhere.
        self._webhook_server: WebhookServer | None = None

    @classmethod
    async def from_kubeconfig(
        cls,
        kubeconfig: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        options: ManagerOptions | None = None,
    ) -> Manager:
        """A manager for a kubeconfig (or $KUBECONFIG, in-cluster, ~/.kube/config).

        ``Manager(client=FakeClient())`` runs the same controllers on testenv's fake client.
        """
        return cls(await ClusterConfig.load(kubeconfig, context=context), options=options)

    # --- what it holds ---------------------------------------------------------------------------

    @property
    def client(self) -> CachedClient:
        """The cached client of the manager's own cluster (reads: cache; writes: apiserver)."""
        return self.cluster.client

    @property
    def cache(self) -> Cache:
        """The cache of the manager's own cluster."""
        return self.cluster.cache

    @property
    def api_reader(self) -> Client:
        """The uncached client of the manager's own cluster."""
        return self.cluster.api_reader

    def pooled_client(self) -> Client:
        """A client of the manager's own cluster with a connection pool of its own (same field
        manager and write guard), for work that must not queue behind the cache's watches —
        each open watch holds one HTTP/1.1 connection of a pool. The caller closes it. Without a
        config (a manager over testenv's FakeClient) this is ``api_reader`` itself, which the
        caller must then not close (``is api_reader`` tells).
        """
        if self._config is None:
            return self.api_reader
        client = Client(self._config, field_manager=self.options.field_manager)
        client.write_guard = self._refuse_unless_leader
        return client

    def _new_lease_client(self) -> Client:
        config = self.options.leader_election_config
        if config is None:
            return self.pooled_client()
        return Client(config, field_manager=self.options.field_manager)

    @property
    def lease_client(self) -> Client:
        """The client Leases are renewed with while the manager runs (its own connections, as
        controller-runtime gives leader election a client of its own: a renewal must never wait
        for a free connection while the lease runs out); ``api_reader`` before start."""
        return self._lease_client or self.api_reader

    async def _close_lease_client(self) -> None:
        leases, self._lease_client = self._lease_client, None
        if leases is not None and leases is not self.api_reader:
            await leases.close()

    def _new_cluster(
        self,
        name: str,
        config: ClusterConfig | None,
        client: Client | None = None,
        *,
        engaged: bool = False,
    ) -> Cluster:
        options = self.options
        if client is None:
            client = Client(config, field_manager=options.field_manager) if config else None
        cluster = Cluster(
            name,
            config,
            client=client,
            # The manager's namespace scopes its own cluster: an engaged cluster is another
            # cluster, whose objects live where its controllers put them.
            namespace=None if engaged else options.namespace,
            compress_cache=options.compress_cache,
        )
        cluster.api_reader.write_guard = self._refuse_unless_leader
        return cluster

    def _refuse_unless_leader(self, method: str, path: str) -> None:
        if self._leading or not _needs_leader.get():
            return
        # The Lease itself must be writable: that is how a standby becomes the leader.
        if "/leases/" in path or path.endswith(("/leases", *_REVIEW_PATHS)):
            return
        raise NotLeader(f"{method} {path} refused: this process is not the leader")

    def add_cluster(
        self, name: str, config: ClusterConfig | None = None, *, client: Client | None = None
    ) -> Cluster:
        """Add a named cluster; its cache starts at once if the manager runs.

        Raises:
            ValueError: the name is taken.
        """
        if name in self.clusters:
            raise ValueError(f"cluster {name!r} exists already")
        cluster = self._new_cluster(name, config, client)
        self.clusters[name] = cluster
        task = self._cluster_tasks[name] = _ClusterTask()
        if self._cluster_group is not None:
            self._cluster_group.start_soon(self._run_cluster, cluster, task, name=f"cluster {name}")
        return cluster

    def remove_cluster(self, name: str) -> Cluster | None:
        """Stop and forget a named cluster (its cache and clients); returns it, None if unknown.

        Sources that controllers opened on it stop delivering; requests for it fail until a
        cluster of that name is added again. For an engaged cluster use ``disengage``, which
        also stops the controllers' sources there and drops its queued requests.
        """
        if name == "":
            raise ValueError("the manager's own cluster cannot be removed")
        cluster = self.clusters.pop(name, None)
        task = self._cluster_tasks.pop(name, None)
        if task is not None:
            # Also before the task began: it enters the cancelled scope and ends at once.
            task.scope.cancel()
        return cluster

    async def _run_cluster(
        self,
        cluster: Cluster,
        task: _ClusterTask,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            with task.scope:
                await cluster.run(task_status=task_status)
        finally:
            task.stopped.set()

    def get_cluster(self, name: str = "") -> Cluster:
        """The cluster called ``name`` ("" is the manager's own).

        Raises:
            KeyError: no such cluster.
        """
        try:
            return self.clusters[name]
        except KeyError:
            raise KeyError(f"no cluster named {name!r}; add it with add_cluster()") from None

    def add(
        self, runnable: Runnable | Callable[[], Awaitable[None]], *, leader_only: bool | None = None
    ) -> None:
        """Run ``runnable`` with the manager; after start it starts at once.

        ``leader_only`` defaults to the runnable's ``need_leader_election()`` if it has one (a
        Controller), else True; leader-only runnables run only while this process leads. A
        runnable with ``warmup()`` (a Controller) has it run on every replica, before leadership;
        one with ``release()`` has it awaited once every runnable stopped.
        """
        if leader_only is None:
            needs = getattr(runnable, "need_leader_election", None)
            leader_only = bool(needs()) if callable(needs) else True
        entry = _Entry(runnable, leader_only)
        self._entries.append(entry)
        if self._others is not None:
            self._start_other(entry, self._others)
        if entry.leader_only and self._leaders is not None:
            self._leaders.start_soon(_run, entry.runnable, True)

    def event_recorder(self, component: str) -> EventRecorder:
        """An EventRecorder writing Events as ``component``."""
        return self.events.recorder(component)

    @property
    def webhook_server(self) -> WebhookServer:
        """The webhook server (the options' or a default one); from the first call on it starts
        with the manager, before the caches, and adds the readyz check ``webhook`` (passing once
        it listens).

        Raises:
            RuntimeError: first asked for after start (it would never run).
        """
        if self._webhook_server is None:
            if self._others is not None:
                raise RuntimeError("the webhook server must be set up before the manager starts")
            from reconcile.webhook.server import WebhookServer

            self._use_webhook_server(self.options.webhook_server or WebhookServer())
        assert self._webhook_server is not None
        return self._webhook_server

    def _use_webhook_server(self, server: WebhookServer) -> None:
        if server.registry is None:
            server.registry = self.registry
        self._webhook_server = server
        self.add_readyz_check("webhook", server.started_checker())

    def add_healthz_check(self, name: str, check: Check) -> None:
        """Add a /healthz check."""
        self._healthz[name] = check

    def add_readyz_check(self, name: str, check: Check) -> None:
        """Add a /readyz check."""
        self._readyz[name] = check

    async def _caches_synced(self) -> str | None:
        # Engaged clusters come and go and may be out of reach: not this process's readiness.
        pending = [
            name or "(own)"
            for name, c in self.clusters.items()
            if name not in self._engaged and not c.has_synced()
        ]
        return f"caches not synced: {', '.join(pending)}" if pending else None

    # --- multi-cluster (reconcile.multicluster) ----------------------------------------------

    def add_provider(self, provider: Provider) -> None:
        """Run ``provider`` with the manager, on every replica, once its own caches synced.

        Several providers may run; each engages clusters of its own (a name engaged by one is
        refused to the others). Before start, the manager waits for each provider to report
        started (its initial clusters engaged) before starting the controllers; after start it
        starts at once. A provider that raises stops the manager, as any runnable.
        """
        self._providers.append(provider)
        if self._providers_started and self._cluster_group is not None:
            self._cluster_group.start_soon(self._run_provider, provider, name=f"{provider!r}")

    async def _start_providers(self, group: TaskGroup) -> None:
        self._providers_started = True
        for provider in list(self._providers):
            await group.start(self._run_provider, provider, name=f"{provider!r}")

    async def _run_provider(
        self, provider: Provider, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        _needs_leader.set(False)  # clusters are engaged on every replica, as caches run there
        await provider.run(_ProviderEngager(self, provider), task_status=task_status)

    def engaged(self) -> dict[str, Cluster]:
        """The engaged clusters by name (a copy)."""
        return {name: self.clusters[name] for name in self._engaged if name in self.clusters}

    async def engage(
        self, name: str, config: ClusterConfig | None = None, *, client: Client | None = None
    ) -> None:
        """Engage the cluster ``name`` (``reconcile.multicluster.Engager``): give it a client
        and cache (``get_cluster(name)``), start the cache if the manager runs, and have every
        multi-cluster controller start its sources there, without waiting for their sync.

        Engaging a name again with an equal config (or the same client) does nothing; with
        another, the cluster is disengaged and engaged anew. Through ``add_provider``, a
        provider may engage only names no other provider engaged.

        Raises:
            ValueError: an empty name, neither config nor client, a name added with
                ``add_cluster``, or one another provider engaged.
        """
        await self._engage(name, config, client, None)

    async def disengage(self, name: str) -> None:
        """Disengage the cluster ``name``: stop every controller's sources in it, drop its
        queued requests from their queues, stop its cache and close its clients, and wait
        (bounded) until its tasks ended. Unknown names are ignored."""
        async with self._engaging:
            if name in self._engaged:
                await self._disengage_now(name)

    async def _engage(
        self, name: str, config: ClusterConfig | None, client: Client | None, owner: object
    ) -> None:
        if not name:
            raise ValueError('cannot engage a cluster named "": that is the manager\'s own')
        if config is None and client is None:
            raise ValueError(f"cannot engage cluster {name!r}: pass a config or a client")
        async with self._engaging:
            engagement = self._engaged.get(name)
            if engagement is None and name in self.clusters:
                raise self._refused(name, "it was added with add_cluster()")
            if engagement is not None:
                if engagement.owner is not owner:
                    raise self._refused(name, f"{engagement.owner_name} engaged it")
                if engagement.same(config, client):
                    return
                log.info("cluster engaged with another config, replacing it", cluster=name)
                await self._disengage_now(name)
            cluster = self._new_cluster(name, config, client, engaged=True)
            self.clusters[name] = cluster
            task = self._cluster_tasks[name] = _ClusterTask()
            self._engaged[name] = _Engagement(owner, config, client)
            if self._cluster_group is not None:  # else it starts with the manager
                await self._cluster_group.start(
                    self._run_cluster, cluster, task, name=f"cluster {name}"
                )
            for aware in self._aware():
                try:
                    await aware.engage(name, cluster)
                except Exception:
                    log.exception("failed to engage a cluster", runnable=repr(aware), cluster=name)
            log.info("cluster engaged", cluster=name)

    def _refused(self, name: str, why: str) -> ValueError:
        log.error("cluster not engaged", cluster=name, reason=why)
        return ValueError(f"cannot engage cluster {name!r}: {why}")

    async def _disengage_now(self, name: str) -> None:
        self._engaged.pop(name, None)
        for aware in self._aware():
            try:
                await aware.disengage(name)
            except Exception:
                log.exception("failed to disengage a cluster", runnable=repr(aware), cluster=name)
        task = self._cluster_tasks.get(name)
        self.remove_cluster(name)
        if task is not None and self._cluster_group is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLUSTER_STOP_TIMEOUT):
                await task.stopped.wait()
        log.info("cluster disengaged", cluster=name)

    def _aware(self) -> list[Aware]:
        found = []
        for entry in list(self._entries):
            runnable = entry.runnable
            if callable(getattr(runnable, "engage", None)) and callable(
                getattr(runnable, "disengage", None)
            ):
                found.append(cast(Aware, runnable))
        return found

    # --- running ---------------------------------------------------------------------------------

    def stop(self) -> None:
        """Begin a graceful stop (idempotent)."""
        self._stop.set()

    async def start(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until stop() (or cancellation); then stop everything in reverse order.

        Raises:
            LeadershipLost: the Lease was lost; the leader-only work was cancelled at once.
            CacheSyncError: a cache did not sync at start (in an ExceptionGroup).
            Exception: whatever a runnable raised (in an ExceptionGroup), after stopping the rest.
        """
        token = current_grace.set(self._grace)  # every runnable's task inherits it
        try:
            await self._start(task_status)
        except BaseExceptionGroup as group:
            lost = _first(group, LeadershipLost)
            if lost is not None:
                raise lost from group
            raise
        finally:
            current_grace.reset(token)

    async def _start(self, task_status: TaskStatus[None]) -> None:
        async with anyio.create_task_group() as deadline, AsyncExitStack() as stack:
            self._lease_client = self._new_lease_client()
            stack.push_async_callback(self._close_lease_client)  # after the Leases' release
            await self._start_servers(await _group(stack))
            self._cluster_group = await _group(stack)
            stack.callback(setattr, self, "_cluster_group", None)
            stack.callback(setattr, self, "_providers_started", False)
            for name, cluster in list(self.clusters.items()):
                task = self._cluster_tasks.setdefault(name, _ClusterTask())
                await self._cluster_group.start(
                    self._run_cluster, cluster, task, name=f"cluster {name or '(own)'}"
                )
            await self._wait_for_caches()
            await self._start_providers(self._cluster_group)
            stack.push_async_callback(self._release_lease)
            others = await _group(stack)
            await others.start(self._run_events)
            for entry in self._entries:
                self._start_other(entry, others)
            self._others = others
            stack.callback(setattr, self, "_others", None)
            (await _group(stack)).start_soon(self._lead)
            log.info("manager started")
            task_status.started()
            await self._stop.wait()
            log.info("manager stopping")
            deadline.start_soon(self._cut_grace_after, self.options.graceful_shutdown_timeout)
            await stack.aclose()
            deadline.cancel_scope.cancel()

    async def _run_events(self, *, task_status: TaskStatus[None]) -> None:
        _needs_leader.set(False)  # a standby's Events (e.g. of cluster probes) are written too
        await self.events.run(task_status=task_status)

    async def _wait_for_caches(self) -> None:
        """controller-runtime's caches group: synced before any other runnable starts.

        Not the engaged clusters': one out of reach must not hold up the manager.
        """
        for name, cluster in list(self.clusters.items()):
            if name not in self._engaged:
                await cluster.wait_for_cache_sync()

    def _start_other(self, entry: _Entry, group: TaskGroup) -> None:
        warmup = getattr(entry.runnable, "warmup", None)
        if callable(warmup):
            group.start_soon(_run, warmup, False)
        if not entry.leader_only:
            group.start_soon(_run, entry.runnable, False)

    async def _cut_grace_after(self, seconds: float) -> None:
        await anyio.sleep(seconds)
        log.warning("graceful shutdown timeout passed, cancelling what is left", timeout=seconds)
        self._grace.cut()

    async def _start_servers(self, group: TaskGroup) -> None:
        from reconcile.serving.server import HTTPServer

        options = self.options
        self.metrics_port = await group.start(self._metrics.run)
        probes = HTTPServer(
            options.health_probe_bind_address, healthz=self._healthz, readyz=self._readyz
        )
        self.probe_port = await group.start(probes.run)
        if self._webhook_server is not None:
            await group.start(_run_webhooks, self._webhook_server)

    def _metrics_server(self) -> HTTPServer:
        """The /metrics server the options ask for.

        Raises:
            ValueError: a bad bind address; CertificateError: an unusable certificate directory.
        """
        from reconcile.serving.auth import with_authentication_and_authorization
        from reconcile.serving.server import HTTPServer, is_loopback, parse_bind_address

        options = self.options
        address = options.metrics_bind_address
        bind = parse_bind_address(address)
        if bind is None:
            return HTTPServer(address)  # disabled
        local = is_loopback(bind[0])
        secure = options.metrics_secure if options.metrics_secure is not None else not local
        if not secure:
            if not local:
                log.warning("metrics served over plain HTTP without authentication", bind=address)
            return HTTPServer(address, registry=self.registry)
        if options.metrics_cert_dir:
            certificate = ServingCertificate.from_directory(
                options.metrics_cert_dir,
                cert_name=options.metrics_cert_name,
                key_name=options.metrics_key_name,
            )
        else:
            certificate = ServingCertificate.self_signed()
        self.metrics_certificate = certificate
        provider = options.metrics_filter_provider or with_authentication_and_authorization
        return HTTPServer(
            address,
            registry=self.registry,
            metrics_filter=provider(self.api_reader),
            certificate=certificate,
        )

    async def _lead(self) -> None:
        if self._election is None:
            self._set_leader(True)
            await self._run_leader_runnables()
            return
        self._elector = LeaderElector(self.lease_client, self._election, on_change=self._set_leader)
        await self._elector.run(self._run_leader_runnables)

    async def _release_lease(self) -> None:
        """After every runnable stopped (controller-runtime's order), if the options ask for it;
        and every runnable's own ``release()`` (a shard's Lease), which must wait as long: its
        objects move to other replicas once it is released."""
        if self._elector is not None and self.options.leader_election_release_on_cancel:
            await self._elector.release()
        for entry in self._entries:
            release = getattr(entry.runnable, "release", None)
            if callable(release):
                await release()

    def _election_config(self) -> LeaderElectionConfig:
        options = self.options
        return LeaderElectionConfig(
            lease_name=options.leader_election_id,
            lease_namespace=options.leader_election_namespace or _in_cluster_namespace(),
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            retry_period=options.retry_period,
            release_on_cancel=False,  # the manager releases it itself, once everything stopped
        )

    def _set_leader(self, leading: bool) -> None:
        if self._leading and not leading and not self._stop.is_set():
            # Lost, not stepping down: another replica may lead already, so in-flight
            # reconciles are cancelled at once instead of finishing (controller-runtime exits).
            self._grace.cut()
        self._leading = leading
        self._leader_gauge.labels(self.options.leader_election_id or "none").set(int(leading))
        if leading:
            self.elected.set()

    async def _run_leader_runnables(self) -> None:
        # Lead until stopped, even with nothing to run: returning would hand the Lease back.
        async with anyio.create_task_group() as group:
            for entry in self._entries:
                if entry.leader_only:
                    group.start_soon(_run, entry.runnable, True)
            self._leaders = group
            try:
                await anyio.sleep_forever()
            finally:
                self._leaders = None

    async def run_until_signalled(self) -> None:
        """Start, and stop gracefully on SIGTERM or SIGINT (a second signal cancels at once).

        For a process's main: once a signal began the stop, a watchdog thread ends the process
        with status 1 if it is still running one second after the graceful timeout
        (work that ignores cancellation cannot hold the process; controller-runtime's Start
        returns at that point and abandons such goroutines).

        Raises:
            as start().
        """
        watchdog: threading.Timer | None = None
        try:
            async with anyio.create_task_group() as group:

                async def watch_signals() -> None:
                    nonlocal watchdog
                    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                        async for signum in signals:
                            if self._stop.is_set():
                                log.warning("second signal, stopping now")
                                self._grace.cut()
                                group.cancel_scope.cancel()
                                return
                            name = signal.Signals(signum).name
                            log.info("signal received, stopping", signal=name)
                            watchdog = _exit_after(self.options.graceful_shutdown_timeout)
                            self.stop()

                group.start_soon(watch_signals)
                await self.start()
                group.cancel_scope.cancel()
        finally:
            if watchdog is not None:
                watchdog.cancel()


_EXIT_SLACK: Final = 1.0
"""Seconds past the graceful timeout after which ``run_until_signalled`` ends the process."""


def _exit_after(timeout: float) -> threading.Timer:
    """A daemon timer that ends the process (status 1) once the stop overran its bound."""

    def exit_now() -> None:
        # Outside the event loop on purpose: a reconcile that swallows cancellation (or blocks
        # the loop) still cannot keep a stopping process alive.
        log.error("stop overran graceful_shutdown_timeout, exiting", timeout=timeout)
        os._exit(1)

    timer = threading.Timer(timeout + _EXIT_SLACK, exit_now)
    timer.daemon = True
    timer.start()
    return timer


async def _ok() -> str | None:
    return None


async def _run_webhooks(
    server: WebhookServer, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED
) -> None:
    _needs_leader.set(False)  # a standby answers webhooks, and may write from them
    await server.run(task_status=task_status)


async def _group(stack: AsyncExitStack) -> TaskGroup:
    """A task group that, on exit of ``stack``, is cancelled and then awaited (reverse order)."""
    group = await stack.enter_async_context(anyio.create_task_group())
    stack.callback(group.cancel_scope.cancel)
    return group


async def _run(runnable: Runnable | Callable[[], Awaitable[None]], needs_leader: bool) -> None:
    _needs_leader.set(needs_leader)  # this task's own context, inherited by the tasks it starts
    run = getattr(runnable, "run", None)
    if run is not None:
        await run()
    else:
        await runnable()  # type: ignore[operator]


def _first(group: BaseExceptionGroup, kind: type[BaseException]) -> BaseException | None:
    """The first exception of ``kind`` in ``group``, however deeply nested."""
    for error in group.exceptions:
        if isinstance(error, kind):
            return error
        if isinstance(error, BaseExceptionGroup):
            found = _first(error, kind)
            if found is not None:
                return found
    return None
