"""Registry keeps one client and cache per member cluster, made from its Cluster object.

A member is reached with ``spec.apiEndpoint`` and the Secret named by ``spec.secretRef`` (keys
``token`` and ``caBundle``), as ``reconcile join`` writes it; for local use a kubeconfig file per
cluster name may be given instead. The registry adds the member to the manager as a named
``reconcile.Cluster`` (so controllers can watch it) and replaces it when its connection details
change, removes it when the Cluster goes. TLS verification stays on: a Cluster asking for
``insecureSkipTLSVerification`` is refused with a clear error.

A new connection comes with a new cache, whose informers start empty: controllers that watch
member objects through it subscribe (``on_connected``) to hear of every (re)connection and look at
that member's objects again.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from controllers.api import SECRET_CA_BUNDLE_KEY, SECRET_TOKEN_KEY, cluster_spec
from reconcile import GVK, Cluster, ClusterConfig, Manager, NotFound

__all__ = ["MemberConfigError", "MemberRegistry"]

SECRET = GVK("", "v1", "Secret")


class MemberConfigError(ValueError):
    """A Cluster object does not say how to reach its member (shown in its Ready condition)."""


class MemberRegistry:
    """Member clusters by name, each a ``reconcile.Cluster`` registered with the manager."""

    def __init__(
        self,
        manager: Manager,
        *,
        kubeconfigs: Mapping[str, Path] | None = None,
        scratch: Path | None = None,
    ) -> None:
        self.manager = manager
        self.kubeconfigs = dict(kubeconfigs or {})
        self._scratch = scratch
        self._fingerprints: dict[str, str] = {}
        self._listeners: list[Callable[[str], None]] = []

    def on_connected(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(name)`` each time member ``name`` gets a new client and cache."""
        self._listeners.append(listener)

    def get(self, name: str) -> Cluster | None:
        """The member called ``name``, or None while it is not (yet) registered."""
        return self.manager.clusters.get(name) if name in self._fingerprints else None

    def names(self) -> list[str]:
        """Registered members, sorted."""
        return sorted(self._fingerprints)

    async def ensure(self, cluster: Mapping[str, Any]) -> Cluster:
        """Register (or re-register after a change) the member for a Cluster object.

        Raises:
            MemberConfigError: no usable endpoint, Secret or kubeconfig.
            ApiError: the Secret could not be read.
        """
        name = str(cluster["metadata"]["name"])
        source, fingerprint = await self._source(name, cluster)
        current = self.get(name)
        if current is not None and self._fingerprints.get(name) == fingerprint:
            return current
        config = await self._config(source)
        self.remove(name)
        member = self.manager.add_cluster(name, config)
        self._fingerprints[name] = fingerprint
        for listener in self._listeners:
            listener(name)
        return member

    def remove(self, name: str) -> None:
        """Forget the member (stops its cache and closes its clients)."""
        if self._fingerprints.pop(name, None) is not None:
            self.manager.remove_cluster(name)

    async def _source(self, name: str, cluster: Mapping[str, Any]) -> tuple[Any, str]:
        if name in self.kubeconfigs:
            path = self.kubeconfigs[name]
            return path, hashlib.sha256(path.read_bytes()).hexdigest()
        spec = cluster_spec(cluster)
        if spec.get("insecureSkipTLSVerification"):
            raise MemberConfigError(
                f"cluster {name}: insecureSkipTLSVerification is refused; TLS verification is "
                "always on (put the member's CA in the Secret's caBundle)"
            )
        endpoint = spec.get("apiEndpoint")
        reference = spec.get("secretRef") or {}
        if not endpoint or not reference.get("name"):
            raise MemberConfigError(f"cluster {name}: spec.apiEndpoint and spec.secretRef needed")
        secret = await self._secret(name, reference)
        data = secret.get("data") or {}
        token = base64.b64decode(data.get(SECRET_TOKEN_KEY, "")).decode()
        ca = data.get(SECRET_CA_BUNDLE_KEY, "")
        if not token:
            raise MemberConfigError(f"cluster {name}: Secret has no {SECRET_TOKEN_KEY!r}")
        kubeconfig = _kubeconfig(name, str(endpoint), token, str(ca))
        return kubeconfig, hashlib.sha256(orjson.dumps(kubeconfig)).hexdigest()

    async def _secret(self, name: str, reference: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return await self.manager.api_reader.get(
                SECRET, str(reference["name"]), namespace=str(reference.get("namespace") or "")
            )
        except NotFound:
            raise MemberConfigError(
                f"cluster {name}: Secret {reference.get('namespace')}/{reference['name']} not found"
            ) from None

    async def _config(self, source: Any) -> ClusterConfig:
        if isinstance(source, Path):
            return await ClusterConfig.from_kubeconfig(source, temp_dir=self._scratch)
        return await ClusterConfig.from_kubeconfig_dict(source, temp_dir=self._scratch)


def _kubeconfig(name: str, endpoint: str, token: str, ca_bundle_b64: str) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": endpoint}
    if ca_bundle_b64:
        cluster["certificate-authority-data"] = ca_bundle_b64
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }
