"""Etcd runs the etcd server that one or more testenv kube-apiservers store their objects in."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from testenv.ports import free_port
from testenv.process import ControlPlaneProcess

__all__ = ["Etcd"]


class Etcd:
    """A single-member etcd on random loopback ports with its data in ``directory``."""

    def __init__(
        self,
        binary: Path,
        directory: Path,
        *,
        attach_output: bool = False,
        persistent: bool = False,
    ) -> None:
        self.directory = directory
        self.client_port = free_port()
        self.peer_port = free_port()
        peer = f"http://127.0.0.1:{self.peer_port}"
        argv = [
            str(binary),
            "--name=default",
            f"--data-dir={directory / 'data'}",
            f"--listen-client-urls={self.url}",
            f"--advertise-client-urls={self.url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            # Tests throw the data away: skipping fsync makes writes an order of magnitude faster.
            "--unsafe-no-fsync=true",
        ]
        self.process = ControlPlaneProcess(
            "etcd",
            argv,
            log_path=directory / "etcd.log",
            attach_output=attach_output,
            persistent=persistent,
        )

    @property
    def url(self) -> str:
        """The client URL kube-apiserver's ``--etcd-servers`` points at."""
        return f"http://127.0.0.1:{self.client_port}"

    async def start(self, *, timeout: float) -> None:
        """Start etcd and wait until ``/health`` answers 200."""
        await self.process.start(self._healthy, timeout=timeout)

    async def stop(self) -> None:
        """Stop etcd (SIGTERM, then SIGKILL)."""
        await self.process.stop()

    async def _healthy(self) -> bool:
        try:
            async with aiohttp.ClientSession() as session, session.get(f"{self.url}/health") as r:
                return r.status == 200
        except aiohttp.ClientError:
            return False

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        # etcd's gRPC gateway speaks JSON with base64 keys; enough for tests to poke at revisions.
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.url}/v3/{path}", data=orjson.dumps(body)) as response,
        ):
            response.raise_for_status()
            result: dict[str, Any] = orjson.loads(await response.read())
            return result

    async def revision(self) -> int:
        """The store's current revision (what kube-apiserver reports as a resourceVersion)."""
        key = base64.b64encode(b"\0").decode()
        answer = await self._call("kv/range", {"key": key, "limit": 1})
        return int(answer["header"]["revision"])

    async def compact(self) -> int:
        """Compact history up to the current revision, so older resourceVersions become 410 Gone."""
        revision = await self.revision()
        await self._call("kv/compaction", {"revision": revision, "physical": True})
        return revision
