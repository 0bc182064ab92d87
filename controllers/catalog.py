"""Catalog lists the controller-manager's controllers and the module that declares each.

A controller's module declares it in one place: ``setup(context)`` registers it with the
manager (``Context.complete`` puts its workers and shard guard together) and ``PERMISSIONS`` is
what its code does on the host (``controllers.rbac``). ``controllers.controllermanager`` runs the
setups and ``controllers.rbac`` gathers the permissions, both from this one list, so a
controller is never run without being granted, or granted without being run. Modules are
imported on use: a controller-manager running a subset loads only what it runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import Final

__all__ = ["CONTROLLER_MODULES", "controller_module"]

CONTROLLER_MODULES: Final[Mapping[str, str]] = {
    "cluster": "controllers.cluster.controller",
    "cluster-status": "controllers.cluster.status",
    "interpreter-config": "controllers.interpreterconfig",
    "detector": "controllers.detector.detector",
    "scheduler": "controllers.scheduler.controller",
    "binding": "controllers.binding.controller",
    "execution": "controllers.execution.controller",
    "status": "controllers.status",
    "workload-rebalancer": "controllers.workloadrebalancer.controller",
    "namespace": "controllers.namespacesync",
    "dependencies-distributor": "controllers.dependencies.distributor",
    "webhook": "controllers.webhook",
    "cluster-taint-policy": "controllers.taint.controller",
    "taint-manager": "controllers.eviction.taintmanager",
    "graceful-eviction": "controllers.eviction.graceful",
    "application-failover": "controllers.eviction.applicationfailover",
}
"""Each controller's name (``--controllers``) and the module with its ``setup`` and
``PERMISSIONS``, in the order they are set up."""


def controller_module(name: str) -> ModuleType:
    """The module declaring controller ``name`` (imported now).

    Raises:
        KeyError: an unknown name.
    """
    return importlib.import_module(CONTROLLER_MODULES[name])
