"""SecretProvider engages the clusters whose kubeconfigs are kept in Secrets, as the Secrets change.

By default it follows Cluster API's convention: the kubeconfig of cluster ``<cluster>`` is the
Secret ``<cluster>-kubeconfig`` in the cluster's namespace, labelled
``cluster.x-k8s.io/cluster-name: <cluster>``, with the kubeconfig under the data key ``value``
(cluster-api's ``secret.KubeconfigDataName``). Cluster API puts the same label on the cluster's
other Secrets (``-ca``, ``-etcd``, ``-sa``...), so the name suffix selects the kubeconfig among
them, and the cluster is named after the Secret without it. ``SecretProvider.multicluster_runtime``
gives the convention of multicluster-runtime's kubeconfig provider instead: label
``sigs.k8s.io/multicluster-runtime-kubeconfig: "true"``, key ``kubeconfig``, the cluster named
after the Secret. Any other label selector, key and suffix can be given.

The Secrets are watched with a ``SharedInformer`` over the given client, scoped to the namespace
and the label selector, so the provider sees (and keeps in memory) only the Secrets it selects.

A kubeconfig in a Secret is untrusted input: whoever may write Secrets in that namespace must not
gain the controller's own powers through it. So it may hold only inline data: exec plugins and
auth providers (code to run) and file references (``certificate-authority``,
``client-certificate``, ``client-key``, ``tokenFile``: files of this process) are refused, and
so is skipping TLS verification (always, see ``reconcile.multicluster.documents``). A Secret
that is refused or unusable is logged once per resourceVersion, naming the Secret and the
reason, never a credential; its cluster is disengaged if it was engaged, and the other clusters
are untouched.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from typing import Final, Self

import anyio
import structlog
from anyio.abc import TaskStatus

from reconcile.cache.informer import FuncHandler, SharedInformer
from reconcile.client.config import ClusterConfig
from reconcile.client.interfaces import WithWatch
from reconcile.client.kubeconfig import ConfigError
from reconcile.gvk import GVK
from reconcile.multicluster.documents import check_inline, parse_kubeconfig
from reconcile.multicluster.pending import Pending
from reconcile.multicluster.provider import Engager
from reconcile.objects import Obj, object_key

__all__ = [
    "CLUSTER_API_KEY",
    "CLUSTER_API_LABEL",
    "CLUSTER_API_SUFFIX",
    "MULTICLUSTER_RUNTIME_KEY",
    "MULTICLUSTER_RUNTIME_LABEL",
    "SecretProvider",
]

log = structlog.get_logger("reconcile.multicluster.secrets")

CLUSTER_API_LABEL: Final = "cluster.x-k8s.io/cluster-name"
"""The label Cluster API puts on every Secret of a cluster, valued with the cluster's name."""
CLUSTER_API_KEY: Final = "value"
"""The data key of a Cluster API kubeconfig Secret."""
CLUSTER_API_SUFFIX: Final = "-kubeconfig"
"""The suffix of a Cluster API kubeconfig Secret's name."""
MULTICLUSTER_RUNTIME_LABEL: Final = "sigs.k8s.io/multicluster-runtime-kubeconfig"
"""The label (valued ``"true"``) of multicluster-runtime's kubeconfig provider."""
MULTICLUSTER_RUNTIME_KEY: Final = "kubeconfig"
"""The data key of multicluster-runtime's kubeconfig provider."""

_SECRET: Final = GVK("", "v1", "Secret")


class SecretProvider:
    """Engages a cluster for each selected Secret of ``namespace`` holding a kubeconfig.

    Args:
        client: reads and watches the Secrets (a ``Client``, ``CachedClient``'s live client, or
            testenv's ``FakeClient``); it needs get, list and watch on Secrets in ``namespace``.
        namespace: the namespace of the Secrets.
        label_selector: which Secrets to watch. Defaults to Cluster API's label (present).
        key: the data key holding the kubeconfig. Defaults to ``value``.
        name_suffix: only Secrets whose name ends with it are kubeconfigs; the cluster is the name
            without it. Defaults to ``-kubeconfig``; "" takes every selected Secret by its name.
        temp_dir: where a client key is written for the instant ``ssl`` loads it.
    """

    def __init__(
        self,
        client: WithWatch,
        namespace: str,
        *,
        label_selector: str | Mapping[str, str] = CLUSTER_API_LABEL,
        key: str = CLUSTER_API_KEY,
        name_suffix: str = CLUSTER_API_SUFFIX,
        temp_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if not namespace:
            raise ValueError("SecretProvider needs a namespace: kubeconfig Secrets are namespaced")
        if not key:
            raise ValueError("SecretProvider needs the data key of the kubeconfig")
        self.client = client
        self.namespace = namespace
        self.label_selector = label_selector
        self.key = key
        self.name_suffix = name_suffix
        self.temp_dir = temp_dir
        self.informer = SharedInformer(
            client.lister_watcher(_SECRET, namespace=namespace, label_selector=label_selector),
            name=f"kubeconfig Secrets of {namespace} ({label_selector})",
        )
        self._pending = Pending()
        self._seen: dict[str, str] = {}
        """Secret key → the resourceVersion last handled, so each version is handled once."""
        self._clusters: dict[str, str] = {}
        """Secret key → the cluster engaged from it."""

    @classmethod
    def multicluster_runtime(
        cls, client: WithWatch, namespace: str, *, temp_dir: str | os.PathLike[str] | None = None
    ) -> Self:
        """The convention of multicluster-runtime's kubeconfig provider (see the module doc)."""
        return cls(
            client,
            namespace,
            label_selector={MULTICLUSTER_RUNTIME_LABEL: "true"},
            key=MULTICLUSTER_RUNTIME_KEY,
            name_suffix="",
            temp_dir=temp_dir,
        )

    def __repr__(self) -> str:
        return f"SecretProvider(namespace={self.namespace!r}, key={self.key!r})"

    @property
    def engaged(self) -> frozenset[str]:
        """The names of the clusters this provider has engaged."""
        return frozenset(self._clusters.values())

    def cluster_name(self, secret_name: str) -> str | None:
        """The cluster a Secret of this name holds the kubeconfig of; None: not a kubeconfig."""
        if not secret_name.endswith(self.name_suffix):
            return None
        return secret_name[: len(secret_name) - len(self.name_suffix)] or None

    async def run(
        self, engager: Engager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Engage the clusters of the Secrets listed at start, report started, follow changes.

        Waits for the first list of the Secrets before reporting started; an apiserver out of
        reach keeps it waiting (with the informer's backoff), as a cache's sync does.
        """
        self.informer.add_event_handler(
            FuncHandler(
                add=lambda obj, _initial: self._pending.note(object_key(obj)),
                update=lambda _old, new: self._pending.note(object_key(new)),
                delete=lambda obj: self._pending.note(object_key(obj)),
            )
        )
        await self._pending.run(
            [self.informer], lambda key: self._handle(engager, key), task_status=task_status
        )

    async def _handle(self, engager: Engager, key: str) -> None:
        secret = self.informer.indexer.get(key)
        if secret is None:
            self._seen.pop(key, None)
            await self._drop(engager, key, "Secret deleted")
            return
        version = str(secret["metadata"].get("resourceVersion") or "")
        if self._seen.get(key) == version:
            return  # a relist or resync of a version already handled
        self._seen[key] = version
        name = self.cluster_name(str(secret["metadata"]["name"]))
        if name is None:
            await self._drop(engager, key, "not a kubeconfig Secret")
            return
        where = f"Secret {key} key {self.key!r}"
        try:
            config = await self._config(secret, where)
        except ConfigError as error:
            log.warning("kubeconfig Secret refused", secret=key, cluster=name, error=str(error))
            await self._drop(engager, key, "kubeconfig refused")
            return
        previous = self._clusters.get(key)
        if previous is not None and previous != name:
            await self._drop(engager, key, "cluster renamed")
        try:
            await engager.engage(name, config)
        except Exception as error:  # the engager refused this one: the others go on
            log.warning("engaging cluster failed", secret=key, cluster=name, error=error)
            self._clusters.pop(key, None)
            return
        self._clusters[key] = name
        log.info("cluster engaged", secret=key, cluster=name, resource_version=version)

    async def _config(self, secret: Obj, where: str) -> ClusterConfig:
        text = _secret_text(secret, self.key, where)
        document = parse_kubeconfig(text, where)
        check_inline(document, where)
        return await ClusterConfig.from_kubeconfig_dict(
            document, temp_dir=self.temp_dir, source=where
        )

    async def _drop(self, engager: Engager, key: str, reason: str) -> None:
        name = self._clusters.pop(key, None)
        if name is None:
            return
        log.info("disengaging cluster", secret=key, cluster=name, reason=reason)
        try:
            await engager.disengage(name)
        except Exception as error:  # one cluster's trouble must not stop the provider
            log.warning("disengaging cluster failed", cluster=name, error=error)


def _secret_text(secret: Obj, key: str, where: str) -> str:
    data = secret.get("data") or {}
    encoded = data.get(key) if isinstance(data, Mapping) else None
    if not encoded:
        raise ConfigError(f"{where}: no such data key (or it is empty)")
    try:
        return base64.b64decode(str(encoded), validate=True).decode()
    except (binascii.Error, ValueError):
        raise ConfigError(f"{where}: not base64-encoded UTF-8") from None
