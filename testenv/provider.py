"""EnvironmentProvider engages the member clusters of a testenv Environment, including later ones.

It is a ``reconcile.multicluster.Provider``: each member control plane is engaged under its own
name with its admin ``ClusterConfig`` (the one ``testenv.manager_for`` uses), the host only if
asked (a manager usually runs on it already). A member started later with ``env.add_member`` is
engaged as soon as it is up, one removed with ``env.remove_member`` disengaged
(``Environment.on_members_changed`` wakes the provider; it also looks every ``interval``
seconds, which catches what a hook cannot: a change made from another thread, an environment
stopped). A member whose apiserver was only stopped (``ControlPlane.stop_apiserver``) stays
engaged: that is the unreachable member the multi-cluster machinery must ride out.
"""

from __future__ import annotations

import threading
from typing import Final

import anyio
import structlog
from anyio.abc import TaskStatus

from reconcile import ClusterConfig
from reconcile.multicluster import Engager
from testenv.controlplane import ControlPlane
from testenv.environment import HOST, Environment

__all__ = ["EnvironmentProvider"]

log = structlog.get_logger("testenv.provider")

DEFAULT_INTERVAL: Final = 1.0


class EnvironmentProvider:
    """Engages every member of ``env`` (and the host as ``"host"`` with ``include_host``)."""

    def __init__(
        self, env: Environment, *, include_host: bool = False, interval: float = DEFAULT_INTERVAL
    ) -> None:
        self.env = env
        self.include_host = include_host
        self.interval = interval
        self._engaged: dict[str, ControlPlane] = {}
        self._wake: anyio.Event | None = None
        self._thread: int | None = None

    @property
    def engaged(self) -> frozenset[str]:
        """The names of the clusters this provider has engaged."""
        return frozenset(self._engaged)

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Engage the members started now, report started, then follow added and removed ones."""
        self._wake = anyio.Event()
        self._thread = threading.get_ident()
        remove = self.env.on_members_changed(self._members_changed)
        try:
            await self._sync(engager)
            task_status.started()
            while True:
                with anyio.move_on_after(self.interval):
                    await self._wake.wait()
                self._wake = anyio.Event()
                await self._sync(engager)
        finally:
            remove()

    def _members_changed(self) -> None:
        # An Event belongs to its event loop: from another thread, the next look catches it.
        if self._wake is not None and threading.get_ident() == self._thread:
            self._wake.set()

    def _planes(self) -> dict[str, ControlPlane]:
        planes = dict(self.env.members)
        if self.include_host and HOST in self.env.clusters:
            planes[HOST] = self.env.clusters[HOST]
        return planes

    async def _sync(self, engager: Engager) -> None:
        planes = self._planes()
        for name in [n for n in self._engaged if n not in planes]:
            del self._engaged[name]
            await engager.disengage(name)
        for name, plane in planes.items():
            if self._engaged.get(name) is plane:
                continue
            try:
                config = await ClusterConfig.from_kubeconfig(
                    plane.kubeconfig, temp_dir=plane.directory / "client"
                )
                await engager.engage(name, config)
            except Exception as error:  # a member stopping meanwhile, a refusal: others go on
                log.warning("engaging member failed", cluster=name, error=error)
                continue
            self._engaged[name] = plane
