"""Multi-cluster controllers: providers engage clusters at run time, controllers watch them all.

See ``reconcile.multicluster.provider`` for the protocols; a request's ``cluster`` names where
its object lives ("" is the manager's own cluster).
"""

from reconcile.multicluster.provider import Engager, Provider

__all__ = ["Engager", "Provider"]
