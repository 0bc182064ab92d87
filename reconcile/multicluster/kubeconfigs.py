"""KubeconfigProvider engages the clusters of kubeconfig files (a file or a folder) as they change.

Two shapes of ``path``:

- **a file**: every context of it is a cluster named after the context (a file listing several
  clusters is the usual way to hand a controller many of them; ``current-context`` is ignored);
- **a directory**: every file in it is one cluster named after the file's stem (``prod.yaml`` and
  ``prod.kubeconfig`` are both ``prod``; of two files with one stem the first by name wins),
  reached through that file's current context. Hidden files (``.x``, which also skips the
  ``..data`` links of a mounted Secret or ConfigMap), editor and temporary files (``#x#``,
  ``x~``, ``.swp``, ``.tmp``, ``.part``) and subdirectories are ignored.

The provider polls every ``interval`` seconds: a file whose modification time, size or inode
changed is read again, and only a cluster whose own entries changed (its context, cluster and
user) is engaged again, so rewriting a file with many contexts restarts only what it changed. A
new cluster is engaged, a vanished one disengaged. Files a kubeconfig refers to (a CA file, a
``tokenFile``) are read when a cluster is engaged; a token file is then re-read by its
credentials, but a changed CA file is only noticed when the kubeconfig itself changes.

A file that cannot be used (unreadable, not YAML, no such user, a refused setting) is logged once
per change of the file, naming it and never a credential; its clusters are disengaged (the file
no longer describes them) and every other cluster stays as it was. These are the operator's own
files: exec plugins and file references are honoured, as kubectl would.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import structlog
from anyio.abc import TaskStatus

from reconcile.client.config import ClusterConfig
from reconcile.client.kubeconfig import ConfigError, resolve_paths
from reconcile.multicluster.documents import fingerprint, parse_kubeconfig
from reconcile.multicluster.provider import Engager

__all__ = ["DEFAULT_POLL_INTERVAL", "MAX_KUBECONFIG_BYTES", "KubeconfigProvider"]

log = structlog.get_logger("reconcile.multicluster.kubeconfigs")

DEFAULT_POLL_INTERVAL: Final = 5.0
"""Seconds between two looks at the kubeconfig files."""
MAX_KUBECONFIG_BYTES: Final = 1024 * 1024
"""The largest kubeconfig file read (a Secret's limit): a larger one, or a device that never
ends, is skipped and logged, not read into memory."""

_TEMPORARY_PREFIXES: Final = (".", "#")
_TEMPORARY_SUFFIXES: Final = ("~", ".swp", ".swo", ".swx", ".tmp", ".part")


@dataclass(frozen=True)
class _Wanted:
    """One cluster a file describes: which context of which document, and its entries' digest."""

    document: Mapping[str, Any]
    context: str | None
    source: str
    digest: str


@dataclass
class _File:
    """What the provider last read of one file, so an unchanged file is neither read nor logged."""

    signature: tuple[int, int, int]
    content: str | None = None
    clusters: dict[str, _Wanted] = field(default_factory=dict)


class KubeconfigProvider:
    """Engages the clusters of the kubeconfig file or directory ``path``, following its changes.

    Args:
        path: a kubeconfig file (one cluster per context) or a directory (one per file).
        interval: seconds between polls. Defaults to 5.
        temp_dir: where a client key is written for the instant ``ssl`` loads it (see
            ``ClusterConfig``). Defaults to the system's temporary directory.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        interval: float = DEFAULT_POLL_INTERVAL,
        temp_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, not {interval}")
        self.path = Path(path).expanduser()
        self.interval = interval
        self.temp_dir = temp_dir
        self._files: dict[Path, _File] = {}
        self._engaged: dict[str, str] = {}
        """Engaged cluster names and the digest of the entries they were engaged with."""
        self._failed: dict[str, str] = {}
        """Clusters whose entries could not be engaged, by digest: not retried until changed."""
        self._missing_logged = False
        self._stop_requested = False
        self._wake: anyio.Event | None = None

    def __repr__(self) -> str:
        return f"KubeconfigProvider({str(self.path)!r})"

    @property
    def engaged(self) -> frozenset[str]:
        """The names of the clusters this provider has engaged."""
        return frozenset(self._engaged)

    def stop(self) -> None:
        """Make ``run`` return after its current poll (the engaged clusters stay engaged)."""
        self._stop_requested = True
        if self._wake is not None:
            self._wake.set()

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Engage the clusters found now, report started, then poll until cancelled or stopped."""
        self._wake = anyio.Event()
        await self.poll(engager)
        task_status.started()
        while not self._stop_requested:
            with anyio.move_on_after(self.interval):
                await self._wake.wait()
            if not self._stop_requested:
                await self.poll(engager)

    async def poll(self, engager: Engager) -> None:
        """Look at the files once and engage, re-engage and disengage what changed."""
        wanted = self._wanted()
        for name in [n for n in self._engaged if n not in wanted]:
            del self._engaged[name]
            log.info("cluster gone from its kubeconfig, disengaging", cluster=name)
            await _disengage(engager, name)
        for name in [n for n in self._failed if n not in wanted]:
            del self._failed[name]
        for name, cluster in wanted.items():
            if cluster.digest not in (self._engaged.get(name), self._failed.get(name)):
                await self._engage(engager, name, cluster)

    async def _engage(self, engager: Engager, name: str, cluster: _Wanted) -> None:
        try:
            config = await ClusterConfig.from_kubeconfig_dict(
                cluster.document,
                context=cluster.context,
                temp_dir=self.temp_dir,
                source=cluster.source,
            )
        except ConfigError as error:
            self._failed[name] = cluster.digest
            log.warning("kubeconfig cluster skipped", cluster=name, error=str(error))
            if self._engaged.pop(name, None) is not None:
                await _disengage(engager, name)
            return
        self._failed.pop(name, None)
        try:
            await engager.engage(name, config)
        except Exception as error:  # the engager refused this one: the others go on
            self._failed[name] = cluster.digest
            self._engaged.pop(name, None)
            log.warning("engaging cluster failed", cluster=name, source=cluster.source, error=error)
            return
        self._engaged[name] = cluster.digest
        log.info("cluster engaged", cluster=name, source=cluster.source)

    # --- reading the files ----------------------------------------------------------------------

    def _wanted(self) -> dict[str, _Wanted]:
        files = self._listing()
        for gone in [p for p in self._files if p not in files]:
            del self._files[gone]
        wanted: dict[str, _Wanted] = {}
        for path in files:
            for name, cluster in self._read(path).clusters.items():
                if name in wanted:
                    continue  # another file of the same stem came first (see the module doc)
                wanted[name] = cluster
        return wanted

    def _listing(self) -> list[Path]:
        try:
            if self.path.is_dir():
                return sorted(p for p in self.path.iterdir() if _wanted_file(p))
            if self.path.is_file():
                self._missing_logged = False
                return [self.path]
        except OSError as error:
            log.warning(
                "kubeconfig directory unreadable", path=str(self.path), error=error.strerror
            )
            return list(self._files)  # keep what was read until the directory can be listed
        if not self._missing_logged:
            self._missing_logged = True
            log.warning("kubeconfig path does not exist", path=str(self.path))
        return []

    def _read(self, path: Path) -> _File:
        try:
            stat = path.stat()
        except OSError:
            return _File((0, 0, 0))  # gone between listing and reading: gone
        signature = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        known = self._files.get(path)
        if known is not None and known.signature == signature:
            return known
        try:
            content = _read_bounded(path)
        except (OSError, UnicodeDecodeError) as error:
            # Never the decoder's message: it quotes the bytes it could not read.
            why = error.strerror if isinstance(error, OSError) else type(error).__name__
            log.warning("kubeconfig unreadable", file=str(path), error=why)
            self._files[path] = _File(signature)
            return self._files[path]
        if known is not None and known.content == content:
            known.signature = signature  # touched, not changed
            return known
        self._files[path] = _File(signature, content, self._clusters_of(path, content))
        return self._files[path]

    def _clusters_of(self, path: Path, content: str) -> dict[str, _Wanted]:
        where = f"kubeconfig {path}"
        try:
            document = resolve_paths(parse_kubeconfig(content, where), path.parent, where=where)
        except ConfigError as error:
            log.warning("kubeconfig skipped", file=str(path), error=str(error))
            return {}
        if self.path.is_dir():
            context = str(document.get("current-context") or "") or None
            return {path.stem: _Wanted(document, context, where, _digest(document, context))}
        return {
            name: _Wanted(document, name, f"{where} (context {name})", _digest(document, name))
            for name in _context_names(document)
        }


def _read_bounded(path: Path) -> str:
    """The file's text, read no further than ``MAX_KUBECONFIG_BYTES``.

    Raises:
        OSError: unreadable, or larger than that (``EFBIG``).
        UnicodeDecodeError: not UTF-8.
    """
    with path.open("rb") as file:
        data = file.read(MAX_KUBECONFIG_BYTES + 1)
    if len(data) > MAX_KUBECONFIG_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_KUBECONFIG_BYTES} bytes")
    return data.decode()


def _wanted_file(path: Path) -> bool:
    name = path.name
    if name.startswith(_TEMPORARY_PREFIXES) or name.endswith(_TEMPORARY_SUFFIXES):
        return False
    return path.is_file()


def _context_names(document: Mapping[str, Any]) -> list[str]:
    # resolve_paths checked that every entry is a mapping with a string name.
    return [entry["name"] for entry in document.get("contexts") or () if entry["name"]]


def _digest(document: Mapping[str, Any], context: str | None) -> str:
    """The digest of what one context uses: its own entry, its cluster's and its user's."""
    contexts = {e["name"]: e for e in document.get("contexts") or ()}
    chosen = contexts.get(context or "") or {}
    body = chosen.get("context") or {}
    clusters = {e["name"]: e for e in document.get("clusters") or ()}
    users = {e["name"]: e for e in document.get("users") or ()}
    return fingerprint(
        [context, chosen, clusters.get(body.get("cluster")), users.get(body.get("user"))]
    )


async def _disengage(engager: Engager, name: str) -> None:
    try:
        await engager.disengage(name)
    except Exception as error:  # one cluster's trouble must not stop the provider
        log.warning("disengaging cluster failed", cluster=name, error=error)
