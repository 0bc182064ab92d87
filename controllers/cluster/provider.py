"""ClusterProvider engages the member of each Karmada ``Cluster`` of the host, as Clusters change.

It is a ``reconcile.multicluster.Provider`` over Karmada's own source of members: the host's
``Cluster`` objects (cluster.karmada.io) and their Secrets. A member is reached exactly as
``MemberRegistry`` reaches it (``controllers.cluster.connection``, whose functions it uses): the
endpoint rules of ``member_spec``, a Secret of the cluster namespace bound to its Cluster, its
token and caBundle checked, ``MemberOptions`` bounding what a Cluster may ask for, and a
kubeconfig file per cluster name (``--member-kubeconfig``) instead, for local use.

Clusters and the Secrets of the cluster namespace are watched with ``SharedInformer`` s over the
given client (so it needs list and watch on Clusters, and on Secrets of that namespace only).
A Cluster is looked at again when it changes or when a Secret of that namespace it names does.
Only the Clusters of its ``ClusterScope`` are looked at (the controller-manager's: every Push
Cluster): one out of scope (a Pull Cluster, whose agent reaches the host, not the other way) is
neither engaged nor reported as a problem; one engaged that leaves the scope (switched to Pull)
is disengaged and its problem cleared, as if it were deleted. A Cluster that breaks a rule is not
engaged (an engaged one is disengaged): it is logged once per
resourceVersion of the Cluster and its Secret, with the ``MemberConfigError`` reason and message
(never the token). A deleted Cluster is disengaged; a changed endpoint, token or CA re-engages
the member with its new config, and a change that leaves the connection as it was (a status
update) does nothing.

Those who report on members (the cluster and cluster-status controllers, through
``controllers.cluster.Members``) read the outcome per Cluster: ``problem`` (the rule a Cluster
breaks), ``token_lifetime`` (when the token it is engaged with expires), and hear of every change
of outcome through ``on_change``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

import anyio
import structlog
from anyio.abc import TaskStatus

from controllers.api import CLUSTER_GVK
from controllers.cluster.connection import (
    SECRET,
    MemberConfigError,
    MemberOptions,
    member_config,
    member_connection,
    secret_name,
)
from controllers.cluster.expiry import TokenLifetime
from controllers.clusterscope import ClusterScope
from reconcile import ClusterConfig, FuncHandler, Obj, SharedInformer, WithWatch
from reconcile.multicluster import Engager, Pending

__all__ = ["ClusterProvider"]

log = structlog.get_logger("controllers.cluster.provider")

_BY_SECRET: Final = "secretRef.name"
"""The index of Clusters by the name of the Secret they reference."""
_NOT_FOUND: Final = "-"
"""The version part of a Secret that is not there, in a Cluster's seen versions."""


class ClusterProvider:
    """Engages the member cluster of each Karmada ``Cluster`` of the host, named as the Cluster.

    Args:
        client: the host's client (a ``Client`` or testenv's ``FakeClient``): list and watch
            Clusters, and Secrets of ``options.cluster_namespace``.
        options: what Clusters may ask for (``MemberOptions``; the defaults by default).
        kubeconfigs: a kubeconfig file per cluster name, used instead of the Cluster's endpoint
            and Secret (the controller-manager's ``--member-kubeconfig``, for local use).
        temp_dir: where a client key is written for the instant ``ssl`` loads it.
        scope: which Clusters this process serves (default: every Push Cluster); the others
            are left alone.
    """

    def __init__(
        self,
        client: WithWatch,
        *,
        options: MemberOptions | None = None,
        kubeconfigs: Mapping[str, Path] | None = None,
        temp_dir: Path | None = None,
        scope: ClusterScope | None = None,
    ) -> None:
        self.client = client
        self.scope = scope or ClusterScope.push()
        self.options = options or MemberOptions()
        self.kubeconfigs = dict(kubeconfigs or {})
        self.temp_dir = temp_dir
        namespace = self.options.cluster_namespace
        self.clusters = SharedInformer(
            client.lister_watcher(CLUSTER_GVK),
            name="Clusters",
            indexers={_BY_SECRET: _secret_names},
        )
        self.secrets = SharedInformer(
            client.lister_watcher(SECRET, namespace=namespace),
            name=f"Secrets of {namespace}",
        )
        self._pending = Pending()
        self._seen: dict[str, str] = {}
        """Cluster name → the versions (Cluster, Secret) last handled, so each is handled once."""
        self._engaged: dict[str, str] = {}
        """Cluster name → the fingerprint of the connection it is engaged with."""
        self._problems: dict[str, MemberConfigError] = {}
        self._lifetimes: dict[str, TokenLifetime] = {}
        self._listeners: list[Callable[[str], None]] = []

    def __repr__(self) -> str:
        namespace = self.options.cluster_namespace
        return f"ClusterProvider(cluster_namespace={namespace!r}, scope={str(self.scope)!r})"

    @property
    def engaged(self) -> frozenset[str]:
        """The names of the clusters this provider has engaged."""
        return frozenset(self._engaged)

    def problem(self, name: str) -> MemberConfigError | None:
        """Why the Cluster ``name`` is not engaged, as last handled; None if it breaks no rule."""
        return self._problems.get(name)

    def token_lifetime(self, name: str) -> TokenLifetime | None:
        """When the token member ``name`` is engaged with expires; None when it is not engaged
        or the expiry is unknown (a kubeconfig file, a token that is no JWT)."""
        return self._lifetimes.get(name) if name in self._engaged else None

    def on_change(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(name)`` whenever the Cluster ``name`` is engaged, re-engaged,
        refused, or disengaged; returns what removes the listener. It must not block."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _changed(self, name: str) -> None:
        for listener in list(self._listeners):
            listener(name)

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Engage the members of the Clusters listed at start, report started, follow changes.

        Waits for the first list of Clusters and Secrets before reporting started (an apiserver
        out of reach keeps it waiting, with the informers' backoff, as a cache's sync does).
        """
        self.clusters.add_event_handler(
            FuncHandler(
                add=lambda obj, _initial: self._cluster_changed(obj),
                update=lambda _old, new: self._cluster_changed(new),
                delete=self._cluster_changed,
            )
        )
        self.secrets.add_event_handler(
            FuncHandler(
                add=lambda obj, _initial: self._secret_changed(obj),
                update=lambda _old, new: self._secret_changed(new),
                delete=self._secret_changed,
            )
        )
        await self._pending.run(
            [self.clusters, self.secrets],
            lambda name: self._handle_safely(engager, name),
            task_status=task_status,
        )

    def _cluster_changed(self, cluster: Obj) -> None:
        # An informer handler must not block: note the Cluster, the run loop engages.
        self._pending.note(str(cluster["metadata"]["name"]))

    def _secret_changed(self, secret: Obj) -> None:
        for name in self.clusters.indexer.index_keys(_BY_SECRET, secret["metadata"]["name"]):
            self._pending.note(name)

    async def _handle_safely(self, engager: Engager, name: str) -> None:
        try:
            await self._handle(engager, name)
        except Exception as error:  # a bug or an odd object: this Cluster's, not the others'
            log.exception("handling cluster failed", cluster=name, error=str(error))

    async def _handle(self, engager: Engager, name: str) -> None:
        cluster = self.clusters.indexer.get(name)
        if cluster is None:
            await self._forget(engager, name, "Cluster deleted")
            return
        if not self.scope.serves(cluster):
            await self._forget(engager, name, f"not in this process's scope ({self.scope})")
            return
        secret = self._secret(cluster)
        versions = f"{_version(cluster)}/{_version(secret) if secret else _NOT_FOUND}"
        if self._seen.get(name) == versions:
            return  # a relist or resync of what was already handled
        self._seen[name] = versions
        try:
            connection = member_connection(cluster, secret, self.options, self.kubeconfigs)
            if self._engaged.get(name) == connection.fingerprint:
                return  # e.g. a status update: the member is reached as it was
            config = await member_config(name, connection.source, temp_dir=self.temp_dir)
        except MemberConfigError as error:
            await self._refuse(engager, name, error)
            return
        self._problems.pop(name, None)
        if connection.lifetime is None:
            self._lifetimes.pop(name, None)
        else:
            self._lifetimes[name] = connection.lifetime
        await self._engage(engager, name, config, connection.fingerprint)
        self._changed(name)

    async def _forget(self, engager: Engager, name: str, reason: str) -> None:
        """Drop all of Cluster ``name``: its engagement, its problem and its seen versions (it
        is handled anew if it comes back, or back into scope)."""
        self._seen.pop(name, None)
        had_problem = self._problems.pop(name, None) is not None
        engaged = name in self._engaged
        await self._drop(engager, name, reason)
        if had_problem and not engaged:  # _drop fires for an engaged one
            self._changed(name)

    async def _refuse(self, engager: Engager, name: str, error: MemberConfigError) -> None:
        log.warning("cluster not engaged", cluster=name, reason=error.reason, error=str(error))
        problem = MemberConfigError(error.reason, f"cluster {name}: {error}")
        before = self._problems.get(name)
        self._problems[name] = problem
        await self._drop(engager, name, error.reason)
        if before is None or (before.reason, str(before)) != (problem.reason, str(problem)):
            self._changed(name)

    def _secret(self, cluster: Obj) -> Obj | None:
        name = secret_name(cluster)
        if name is None:
            return None
        return self.secrets.indexer.get(f"{self.options.cluster_namespace}/{name}")

    async def _engage(
        self, engager: Engager, name: str, config: ClusterConfig, fingerprint: str
    ) -> None:
        try:
            await engager.engage(name, config)
        except Exception as error:  # the engager refused this one: the others go on
            log.warning("engaging cluster failed", cluster=name, error=str(error))
            self._engaged.pop(name, None)
            return
        self._engaged[name] = fingerprint
        log.info("cluster engaged", cluster=name, host=config.host)

    async def _drop(self, engager: Engager, name: str, reason: str) -> None:
        self._lifetimes.pop(name, None)
        if self._engaged.pop(name, None) is None:
            return
        self._changed(name)
        log.info("disengaging cluster", cluster=name, reason=reason)
        try:
            await engager.disengage(name)
        except Exception as error:  # one cluster's trouble must not stop the provider
            log.warning("disengaging cluster failed", cluster=name, error=str(error))


def _secret_names(cluster: Obj) -> list[str]:
    name = secret_name(cluster)
    return [] if name is None else [name]


def _version(obj: Obj) -> str:
    return str(obj["metadata"].get("resourceVersion") or "")
