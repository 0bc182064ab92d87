"""Controllermanager assembles the multi-cluster controllers into one reconcile Manager.

``build(manager, controllers=...)`` creates the shared Context (members, interpreter) and
sets up the named controllers (all by default, like karmada-controller-manager's ``--controllers``
with ``*``): cluster, cluster-status, interpreter-config, detector, scheduler, binding, execution,
status, workload-rebalancer, namespace, dependencies-distributor, cluster-taint-policy,
taint-manager, graceful-eviction, application-failover; ``webhook`` (Karmada's admission
webhook) only when named. ``run_controller_manager`` is what ``reconcile controller-manager``
runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

import structlog

from controllers.catalog import CONTROLLER_MODULES, controller_module
from controllers.cluster import (
    ClusterHealthOptions,
    ClusterStatusOptions,
    MemberOptions,
    Members,
)
from controllers.clusterscope import ClusterScope
from controllers.context import Context
from controllers.eviction.options import FailoverOptions
from controllers.interpreter.customization import bundled_customizations
from controllers.interpreter.directory import load_customization_directory, thirdparty_backend
from controllers.interpreter.facade import Interpreter
from controllers.sharding import Sharding, ShardingOptions
from reconcile import Manager, ManagerOptions

_log = structlog.get_logger("controllers.controllermanager")

__all__ = ["CONTROLLERS", "DISABLED_BY_DEFAULT", "NOT_SHARDED", "build", "run_controller_manager"]

Setup = Callable[[Context], None]


def _lazy(name: str) -> Setup:
    # Imported on use: a controller-manager running a subset loads only what it runs.
    def setup(context: Context) -> None:
        controller_module(name).setup(context)

    return setup


CONTROLLERS: Final[Mapping[str, Setup]] = {name: _lazy(name) for name in CONTROLLER_MODULES}
"""Each controller's setup by name, from ``controllers.catalog`` (which ``controllers.rbac``
reads for their permissions too)."""

NOT_SHARDED: Final = frozenset({"dependencies-distributor"})
"""Controllers left out of a sharded controller-manager: an attached binding has its
dependency's key, so it is on another replica than the binding that needs it."""

DISABLED_BY_DEFAULT: Final = frozenset({"webhook"})
"""Controllers ``*`` leaves out, as karmada-controller-manager's ``*`` does its opt-in ones: name
them to run them (``--controllers=*,webhook``)."""


def _selected(names: Sequence[str] | None) -> list[str]:
    """karmada's syntax: ``*`` for all, ``-name`` to leave one out."""
    wanted = list(names or ["*"])
    chosen = [c for c in CONTROLLERS if c not in DISABLED_BY_DEFAULT] if "*" in wanted else []
    for name in wanted:
        if name == "*":
            continue
        bare = name.removeprefix("-")
        if bare not in CONTROLLERS:
            known = ", ".join(CONTROLLERS)
            raise ValueError(f"unknown controller {bare!r} (known: {known})")
        if name.startswith("-"):
            chosen = [c for c in chosen if c != bare]
        elif bare not in chosen:
            chosen.append(bare)
    return chosen


def build(
    manager: Manager,
    *,
    controllers: Sequence[str] | None = None,
    member_kubeconfigs: Mapping[str, Path] | None = None,
    scratch: Path | None = None,
    cluster_status: ClusterStatusOptions | None = None,
    members: MemberOptions | None = None,
    interpreter: Interpreter | None = None,
    cluster_health: ClusterHealthOptions | None = None,
    failover: FailoverOptions | None = None,
    sharding: ShardingOptions | None = None,
    scope: ClusterScope | None = None,
) -> Context:
    """Set up the selected controllers on ``manager`` and return their shared Context.

    ``cluster_status`` sets how often members are probed and how long a change of their health
    takes to show in their Ready condition (default: Karmada's 10 s, 30 s, 30 s). ``members``
    sets which member connections Clusters may ask for (default: https only, Secrets from
    ``karmada-cluster`` only). ``cluster_health`` sets the health monitor's periods and
    ``failover`` the taint and graceful eviction (default: Karmada's, taint eviction off).
    ``sharding`` makes this replica one shard of several (``controllers.sharding``). ``scope``
    is which Clusters' members, Works and status this process serves (default: every Push
    Cluster, as karmada-controller-manager; an agent serves its own Cluster only).

    Raises:
        ValueError: an unknown controller name, or one that cannot run sharded.
    """
    engaged = Members.of(
        manager, options=members, kubeconfigs=member_kubeconfigs, temp_dir=scratch, scope=scope
    )
    context = Context(manager, engaged, cluster_status=cluster_status or ClusterStatusOptions())
    if interpreter is not None:
        context.interpreter = interpreter
    context.cluster_health = cluster_health or ClusterHealthOptions()
    context.failover = failover or FailoverOptions()
    chosen = _selected(controllers)
    if sharding is not None:
        chosen = _unsharded_left_out(chosen, controllers)
        # Before any setup: setups open informers of the sharded kinds.
        context.sharding = Sharding(manager, sharding)
    for name in chosen:
        CONTROLLERS[name](context)
    return context


def _unsharded_left_out(chosen: list[str], asked: Sequence[str] | None) -> list[str]:
    """``chosen`` without the controllers that cannot run sharded (``NOT_SHARDED``).

    Raises:
        ValueError: one of them was named explicitly.
    """
    named = sorted(set(asked or ()) & NOT_SHARDED)
    if named:
        raise ValueError(f"{', '.join(named)} cannot run with --shards (yet): leave it out")
    left = [name for name in chosen if name in NOT_SHARDED]
    if left:
        _log.warning("not running with --shards", controllers=left)
    return [name for name in chosen if name not in NOT_SHARDED]


async def run_controller_manager(
    kubeconfig: str | None,
    *,
    context: str | None = None,
    controllers: Sequence[str] | None = None,
    options: ManagerOptions | None = None,
    member_kubeconfigs: Mapping[str, Path] | None = None,
    cluster_status: ClusterStatusOptions | None = None,
    members: MemberOptions | None = None,
    interpreter_customizations: Path | None = None,
    cluster_health: ClusterHealthOptions | None = None,
    failover: FailoverOptions | None = None,
    sharding: ShardingOptions | None = None,
) -> None:
    """Run the controllers against the host until SIGTERM/SIGINT.

    ``interpreter_customizations`` is a directory of third-party ResourceInterpreterCustomization
    files (``--interpreter-customizations``): each file that does not load is logged, the others
    are asked before the bundled customizations.

    Raises:
        ConfigError: the host kubeconfig is unusable.
        LeadershipLost: leader election was on and the Lease was lost.
    """
    manager = await Manager.from_kubeconfig(kubeconfig, context=context, options=options)
    build(
        manager,
        controllers=controllers,
        member_kubeconfigs=member_kubeconfigs,
        cluster_status=cluster_status,
        members=members,
        interpreter=await _interpreter(interpreter_customizations),
        cluster_health=cluster_health,
        failover=failover,
        sharding=sharding,
    )
    await manager.run_until_signalled()


async def _interpreter(directory: Path | None) -> Interpreter | None:
    if directory is None:
        return None
    loaded = await load_customization_directory(directory)
    for error in loaded.errors:
        _log.error("interpreter customization skipped", error=error)
    thirdparty = thirdparty_backend(loaded.customizations, bundled_customizations())
    return Interpreter(thirdparty=thirdparty)
