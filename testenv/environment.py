"""Environment starts real control planes for tests: one etcd, a host kube-apiserver, N members.

Every apiserver stores its objects in the one etcd under its own ``--etcd-prefix``, which is much
cheaper than an etcd each, and members can be added after start. Use it as an async context manager
(``async with Environment(members=["member1"]) as env``) or, from synchronous code, as a plain
context manager; either way everything started is stopped and the temporary directory removed,
also when start-up fails half-way or the test run is interrupted.
"""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Final, Self

import anyio
import anyio.from_thread

from testenv.apiserver import APIServer
from testenv.binaries import Binaries, find_binaries
from testenv.controlplane import ControlPlane
from testenv.etcd import Etcd
from testenv.process import attach_output_default, start_timeout_default

__all__ = ["HOST", "Environment"]

HOST: Final = "host"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class Environment:
    """A running etcd with a host control plane and any number of member control planes.

    Args:
        members: names of member clusters to start with the host.
        crd_paths: files or directories of CRDs installed into every cluster at start.
        apiserver_flags: kube-apiserver flags overriding envtest's defaults; None removes a flag.
        start_timeout: seconds per program to become ready. Defaults to
            ``KUBEBUILDER_CONTROLPLANE_START_TIMEOUT`` or 60.
        attach_output: show control-plane output instead of logging it to files. Defaults to
            ``KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT``.
        binaries: programs to run. Defaults to envtest's lookup (see testenv.binaries).
        persistent: let the programs outlive this process (for debugging; see testenv.state).
            Defaults to False: they die with it even when it is killed.
    """

    def __init__(
        self,
        *,
        members: Sequence[str] = (),
        crd_paths: Iterable[Path | str] = (),
        apiserver_flags: Mapping[str, str | None] | None = None,
        start_timeout: float | None = None,
        attach_output: bool | None = None,
        binaries: Binaries | None = None,
        persistent: bool = False,
    ) -> None:
        for name in members:
            _check_name(name)
        if len(set(members)) != len(members):
            raise ValueError(f"member names must be unique: {list(members)}")
        self.member_names = list(members)
        self.crd_paths = [Path(p) for p in crd_paths]
        self.apiserver_flags = dict(apiserver_flags or {})
        self.start_timeout = start_timeout if start_timeout is not None else start_timeout_default()
        self.attach_output = attach_output_default() if attach_output is None else attach_output
        self._binaries = binaries
        self.persistent = persistent
        self.directory: Path | None = None
        self.etcd: Etcd | None = None
        self.clusters: dict[str, ControlPlane] = {}
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._portal_cm: AbstractContextManager[anyio.from_thread.BlockingPortal] | None = None
        self._member_listeners: list[Callable[[], None]] = []

    @property
    def host(self) -> ControlPlane:
        """The host control plane (where policies, bindings and Works live)."""
        return self._started(HOST)

    @property
    def members(self) -> dict[str, ControlPlane]:
        """The member control planes by name, in start order."""
        return {name: cp for name, cp in self.clusters.items() if name != HOST}

    def _started(self, name: str) -> ControlPlane:
        try:
            return self.clusters[name]
        except KeyError:
            raise RuntimeError(f"cluster {name!r} is not started") from None

    @property
    def binaries(self) -> Binaries:
        """The programs this environment runs."""
        if self._binaries is None:
            self._binaries = find_binaries()
        return self._binaries

    async def start(self) -> None:
        """Start etcd, the host and the members (in parallel), then install the CRDs.

        Raises:
            BinaryNotFound: a program is missing (run ``reconcile testenv install``).
            StartError: a program exited or was not ready in time; its log tail is in the message.
        """
        if self.etcd is not None:
            raise RuntimeError("environment already started")
        binaries = self.binaries
        self.directory = Path(tempfile.mkdtemp(prefix="testenv-"))
        if not self.persistent:
            atexit.register(self._kill_now)
        try:
            self.etcd = Etcd(
                binaries.etcd,
                self.directory / "etcd",
                attach_output=self.attach_output,
                persistent=self.persistent,
            )
            self.etcd.directory.mkdir()
            await self.etcd.start(timeout=self.start_timeout)
            await self._start_clusters([HOST, *self.member_names])
        except BaseException:
            await self.stop()
            raise

    async def add_member(self, name: str) -> ControlPlane:
        """Start one more member cluster on the shared etcd (CRDs from ``crd_paths`` included)."""
        _check_name(name)
        if name in self.clusters:
            raise ValueError(f"cluster {name!r} already exists")
        await self._start_clusters([name])
        self.member_names.append(name)
        self._members_changed()
        return self.clusters[name]

    async def remove_member(self, name: str) -> None:
        """Stop the member ``name``, forget it and remove its directory.

        Its objects stay in etcd under its prefix: a member added again under the name finds them.

        Raises:
            KeyError: no such member.
        """
        if name == HOST or name not in self.clusters:
            raise KeyError(f"no member {name!r}")
        plane = self.clusters.pop(name)
        self.member_names.remove(name)
        self._members_changed()
        await plane.stop()
        shutil.rmtree(plane.directory, ignore_errors=True)

    def on_members_changed(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` after each ``add_member`` (once started) and ``remove_member``.

        It is called in that method's task and must not block. Returns a function that
        removes it again.
        """
        self._member_listeners.append(listener)

        def remove() -> None:
            if listener in self._member_listeners:
                self._member_listeners.remove(listener)

        return remove

    def _members_changed(self) -> None:
        for listener in list(self._member_listeners):
            listener()

    async def _start_clusters(self, names: list[str]) -> None:
        planes = [self._new_control_plane(name) for name in names]
        self.clusters.update({cp.name: cp for cp in planes})
        try:
            async with anyio.create_task_group() as group:
                for plane in planes:
                    group.start_soon(self._start_one, plane)
        except ExceptionGroup as group_error:
            raise _first_cause(group_error) from group_error

    async def _start_one(self, plane: ControlPlane) -> None:
        await plane.start(timeout=self.start_timeout)
        if self.crd_paths:
            await plane.install_crds(self.crd_paths)

    def _new_control_plane(self, name: str) -> ControlPlane:
        if self.etcd is None or self.directory is None:
            raise RuntimeError("environment not started")
        directory = self.directory / name
        directory.mkdir()
        apiserver = APIServer(
            self.binaries.kube_apiserver,
            directory,
            etcd_url=self.etcd.url,
            etcd_prefix=f"/{name}/registry",
            flags=self.apiserver_flags,
            attach_output=self.attach_output,
            persistent=self.persistent,
            name=f"kube-apiserver[{name}]",
        )
        return ControlPlane(name, apiserver, self.binaries.kubectl)

    async def stop(self) -> None:
        """Stop every apiserver, then etcd, and remove the temporary directory. Idempotent."""
        with anyio.CancelScope(shield=True):
            planes, self.clusters = list(self.clusters.values()), {}
            async with anyio.create_task_group() as group:
                for plane in planes:
                    group.start_soon(plane.stop)
            etcd, self.etcd = self.etcd, None
            if etcd is not None:
                await etcd.stop()
        self._remove_directory()
        atexit.unregister(self._kill_now)

    def _remove_directory(self) -> None:
        directory, self.directory = self.directory, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    def _kill_now(self) -> None:
        # Interpreter exit without stop() (an interrupted run): no event loop is left to await on.
        for plane in self.clusters.values():
            plane.apiserver.process.kill_now()
        if self.etcd is not None:
            self.etcd.process.kill_now()
        self._remove_directory()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def __enter__(self) -> Self:
        """Start from synchronous code; the clients live on a private event-loop thread."""
        portal_cm = anyio.from_thread.start_blocking_portal()
        self._portal = portal_cm.__enter__()
        self._portal_cm = portal_cm
        try:
            self._portal.call(self.start)
        except BaseException:
            portal_cm.__exit__(None, None, None)
            self._portal = None
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        portal, self._portal = self._portal, None
        if portal is not None:
            try:
                portal.call(self.stop)
            finally:
                if self._portal_cm is not None:
                    self._portal_cm.__exit__(None, None, None)

    @property
    def portal(self) -> anyio.from_thread.BlockingPortal:
        """In synchronous use, the portal to run coroutines on the environment's event loop."""
        if self._portal is None:
            raise RuntimeError("the environment was not started with `with`")
        return self._portal


def _check_name(name: str) -> None:
    if name == HOST or not _NAME.match(name):
        raise ValueError(f"invalid member name {name!r}: a DNS label other than {HOST!r}")


def _first_cause(group: BaseExceptionGroup[BaseException]) -> BaseException:
    # Start-up of parallel clusters fails with a group; the first real error is the useful message.
    first = group.exceptions[0]
    return _first_cause(first) if isinstance(first, BaseExceptionGroup) else first
