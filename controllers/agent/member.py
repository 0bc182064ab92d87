"""AgentMember is the provider of ``reconcile agent``: it engages the one member the agent runs in.

The agent's manager runs against the host (its Works and its Cluster live there); its member is
the cluster the agent runs in, reached with ``--kubeconfig`` or the in-cluster service account,
engaged once at start under the Cluster's name and never disengaged while the agent runs, so the
execution and cluster-status controllers reach it exactly as the controller-manager's reach a
Push member (``controllers.cluster.Members``). Its token is the agent's own, renewed by the
kubelet: no expiry to report.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from anyio.abc import TaskStatus

from controllers.cluster import MemberConfigError, MemberOptions
from controllers.cluster.expiry import TokenLifetime
from controllers.clusterscope import ClusterScope
from reconcile import ClusterConfig
from reconcile.multicluster import Engager

__all__ = ["AgentMember"]


class AgentMember:
    """Engages the cluster ``name``, reached with ``config``, for as long as it runs.

    Args:
        name: the Cluster's name on the host (the agent's ``--cluster-name``).
        config: how the agent reaches its own cluster.
        options: the cluster namespace (where the heartbeat Lease is renewed).
    """

    def __init__(self, name: str, config: ClusterConfig, options: MemberOptions) -> None:
        self.name = name
        self.config = config
        self.options = options
        self.scope = ClusterScope.only(name)
        self._engaged = False
        self._listeners: list[Callable[[str], None]] = []

    def __repr__(self) -> str:
        return f"AgentMember({self.name!r})"

    @property
    def engaged(self) -> frozenset[str]:
        """The agent's member once engaged."""
        return frozenset((self.name,)) if self._engaged else frozenset()

    def problem(self, name: str) -> MemberConfigError | None:
        """None: the agent's member is reached with the agent's own credentials."""
        return None

    def token_lifetime(self, name: str) -> TokenLifetime | None:
        """None: the agent's token is its service account's, renewed for it."""
        return None

    def on_change(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(name)`` when the member is engaged; returns what removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Engage the member, report started, and hold it until cancelled."""
        await engager.engage(self.name, self.config)
        self._engaged = True
        for listener in list(self._listeners):
            listener(self.name)
        task_status.started()
        await anyio.sleep_forever()
