"""Multi-cluster controllers: providers engage clusters at run time, controllers watch them all.

sigs.k8s.io/multicluster-runtime in Python. A ``Provider`` (``provider``) engages and disengages
clusters in the manager (``Manager.add_provider``; the manager is the ``Engager``); each engaged
cluster gets its own client and cache (``manager.get_cluster(name)``). Providers here:
``KubeconfigProvider`` (kubeconfig files, ``kubeconfigs``) and ``SecretProvider`` (Secrets holding
kubeconfigs, ``secrets``). A controller built with ``cluster=ENGAGED`` (or an ``Engaged``
selector) watches its kinds in every engaged cluster through an ``EngagedSource``; its Requests
carry ``cluster``, the name of the cluster their object lives in ("" is the manager's own).
Anything ``Aware`` the manager runs hears of each engagement.
"""

from reconcile.multicluster.aware import Aware
from reconcile.multicluster.engaged import ENGAGED, Engaged
from reconcile.multicluster.kubeconfigs import KubeconfigProvider
from reconcile.multicluster.pending import Pending
from reconcile.multicluster.provider import Engager, Provider
from reconcile.multicluster.secrets import SecretProvider
from reconcile.multicluster.source import EngagedSource, SourceFactory, in_cluster

__all__ = [
    "ENGAGED",
    "Aware",
    "Engaged",
    "EngagedSource",
    "Engager",
    "KubeconfigProvider",
    "Pending",
    "Provider",
    "SecretProvider",
    "SourceFactory",
    "in_cluster",
]
