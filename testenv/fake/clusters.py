"""FakeClusters is several in-memory clusters by name, for fast unit tests of multi-cluster code.

Each cluster is a ``FakeClient`` of its own (its objects, resourceVersions and watches), looked up
by name (``clusters["member1"]``). Clusters are added and removed at run time with ``add`` and
``remove``, and ``FakeClusters`` is itself a ``reconcile.multicluster.Provider``: run by a
multi-cluster manager, it engages each cluster with ``client=`` its FakeClient, the ones added
later too, and disengages the removed ones. ``await clusters.settled()`` waits until the provider
has caught up with every ``add`` and ``remove``, so a test knows the manager holds them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import anyio
from anyio.abc import TaskStatus

from reconcile.multicluster import Engager
from testenv.fake.client import FakeClient

__all__ = ["FakeClusters"]


class FakeClusters:
    """FakeClients by cluster name, and a Provider engaging them.

    Args:
        names: the clusters to start with.
        factory: makes the FakeClient of a new cluster (to seed objects or install CRDs in
            every cluster). Defaults to an empty ``FakeClient()``.
    """

    def __init__(
        self, names: Iterable[str] = (), *, factory: Callable[[str], FakeClient] | None = None
    ) -> None:
        self.factory = factory or (lambda _name: FakeClient())
        self._clients: dict[str, FakeClient] = {}
        self._engaged: dict[str, FakeClient] = {}
        self._engager: Engager | None = None
        self._wake: anyio.Event | None = None
        self._passed: anyio.Event | None = None
        for name in names:
            self.add(name)

    def __repr__(self) -> str:
        return f"FakeClusters({list(self._clients)!r})"

    def __getitem__(self, name: str) -> FakeClient:
        try:
            return self._clients[name]
        except KeyError:
            raise KeyError(f"no fake cluster {name!r} (have {sorted(self._clients)})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._clients

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._clients))

    def __len__(self) -> int:
        return len(self._clients)

    @property
    def engaged(self) -> frozenset[str]:
        """The clusters the running provider has engaged."""
        return frozenset(self._engaged)

    def add(self, name: str, client: FakeClient | None = None) -> FakeClient:
        """Add the cluster ``name`` (with ``client``, or a new one from ``factory``); returns it.

        Raises:
            ValueError: ``name`` is empty (the manager's own cluster) or already present.
        """
        if not name:
            raise ValueError('a fake cluster needs a name ("" is the manager\'s own cluster)')
        if name in self._clients:
            raise ValueError(f"fake cluster {name!r} already exists")
        added = self._clients[name] = client if client is not None else self.factory(name)
        self._changed()
        return added

    def remove(self, name: str) -> FakeClient:
        """Remove the cluster ``name`` (disengaged by the running provider); returns its client.

        Raises:
            KeyError: no such cluster.
        """
        removed = self[name]
        del self._clients[name]
        self._changed()
        return removed

    def _changed(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Engage every cluster, report started, then follow ``add`` and ``remove``."""
        if self._engager is not None:
            raise RuntimeError("FakeClusters is already running for an engager")
        self._engager = engager
        self._wake = anyio.Event()
        try:
            await self._sync(engager)
            task_status.started()
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                await self._sync(engager)
        finally:
            self._engager = None
            self._wake = None
            self._engaged.clear()

    async def _sync(self, engager: Engager) -> None:
        while True:
            gone = [n for n, c in self._engaged.items() if self._clients.get(n) is not c]
            new = [n for n, c in self._clients.items() if self._engaged.get(n) is not c]
            if not gone and not new:
                break
            for name in gone:
                del self._engaged[name]
                await engager.disengage(name)
            for name in new:
                if name in self._clients:  # removed again while another engaged
                    client = self._clients[name]
                    await engager.engage(name, client=client)
                    self._engaged[name] = client
        passed, self._passed = self._passed, None
        if passed is not None:
            passed.set()

    async def settled(self) -> None:
        """Wait until the running provider has engaged and disengaged every change so far."""
        while self._engager is None or self._engaged != self._clients:
            if self._passed is None:
                self._passed = anyio.Event()
            await self._passed.wait()
