"""The seed's ReplicaSet example: label each ReplicaSet with the number of its Pods."""

from examples.replicaset.controller import POD_COUNT_LABEL, ReplicaSetReconciler, setup

__all__ = ["POD_COUNT_LABEL", "ReplicaSetReconciler", "setup"]
