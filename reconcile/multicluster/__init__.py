"""Multi-cluster controllers: providers engage clusters at run time, controllers watch them all.

See ``reconcile.multicluster.provider`` for the protocols, ``kubeconfigs`` and ``secrets`` for
providers of kubeconfig files and of Secrets holding kubeconfigs; a request's ``cluster`` names
where its object lives ("" is the manager's own cluster).
"""

from reconcile.multicluster.kubeconfigs import KubeconfigProvider
from reconcile.multicluster.provider import Engager, Provider
from reconcile.multicluster.secrets import SecretProvider

__all__ = ["Engager", "KubeconfigProvider", "Provider", "SecretProvider"]
