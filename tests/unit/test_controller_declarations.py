"""A controller is declared once: its module's ``setup`` and ``PERMISSIONS``, listed in the catalog.

The controller-manager runs the setups and ``controllers.rbac`` gathers the permissions from the
same list (``controllers.catalog``), and ``Context.complete`` puts a sharded controller's workers
on every replica and its reconciler behind the shard guard together, never one without the other.
"""

from __future__ import annotations

import pytest

from controllers.api import WORK_GVK
from controllers.catalog import CONTROLLER_MODULES, controller_module
from controllers.cluster import Members
from controllers.clusterscope import ClusterScope
from controllers.context import BINDINGS, TEMPLATES, Context, ShardKey
from controllers.controllermanager import CONTROLLERS, build
from controllers.execution import ExecutionController
from controllers.rbac import Permissions, Rule, cache, declared
from controllers.sharding import Sharding, ShardingOptions
from reconcile import Manager, Request, controller_managed_by
from reconcile.sharding.shard import _Guard
from testenv import FakeClient


@pytest.mark.parametrize("name", list(CONTROLLER_MODULES))
def test_each_controller_module_declares_its_setup_and_permissions(name: str) -> None:
    module = controller_module(name)
    assert callable(module.setup)
    assert isinstance(module.PERMISSIONS, Permissions)


def test_the_controller_manager_runs_and_rbac_grants_the_same_controllers() -> None:
    assert list(CONTROLLERS) == list(CONTROLLER_MODULES)
    assert list(declared()) == ["manager", *CONTROLLER_MODULES, "sharding"]


def test_every_catalogued_setup_registers_its_controllers() -> None:
    context = build(Manager(client=FakeClient()), controllers=["*", "webhook"])
    assert "cluster" in context.manager.controller_names
    assert "cluster-status" in context.manager.controller_names
    assert "execution" in context.manager.controller_names


def test_one_scope_is_shared_by_the_members_and_every_controller() -> None:
    assert build(Manager(client=FakeClient()), controllers=["cluster"]).scope.cluster is None
    scope = ClusterScope.only("mine")
    context = build(Manager(client=FakeClient()), controllers=["cluster"], scope=scope)
    assert context.scope is scope
    assert context.members.provider.scope is scope
    assert ExecutionController(context).scope is scope


def test_a_cache_rule_is_list_and_watch_and_says_why() -> None:
    assert cache("work.karmada.io", "works") == Rule(
        ("work.karmada.io",), ("works",), ("list", "watch"), "its cache"
    )
    assert cache("", "a", "b", why="x").resources == ("a", "b")


async def _reconcile(request: Request) -> None:
    return None


def _context(*, sharded: bool) -> Context:
    manager = Manager(client=FakeClient())
    context = Context(manager, Members.of(manager))
    if sharded:
        context.sharding = Sharding(manager, ShardingOptions("r0", "karmada-system"))
    return context


@pytest.mark.parametrize(
    "key", [WORK_GVK, TEMPLATES, BINDINGS], ids=["kind", "templates", "bindings"]
)
def test_sharded_controllers_run_on_every_replica_behind_the_guard(key: ShardKey) -> None:
    context = _context(sharded=True)
    builder = controller_managed_by(context.manager).for_(WORK_GVK).named("works")
    controller = context.complete(builder, _reconcile, sharded_by=key, workers=3)
    assert controller.options.need_leader_election is False
    assert controller.options.max_concurrent_reconciles == 3
    assert isinstance(controller.reconciler, _Guard)


def test_a_controller_with_nothing_to_guard_still_runs_on_every_replica() -> None:
    context = _context(sharded=True)
    builder = controller_managed_by(context.manager).for_(WORK_GVK).named("works")
    controller = context.complete(builder, _reconcile, sharded_by=None)
    assert controller.options.need_leader_election is False
    assert not isinstance(controller.reconciler, _Guard)


def test_unsharded_controllers_keep_the_leaders_workers_and_no_guard() -> None:
    context = _context(sharded=False)
    builder = controller_managed_by(context.manager).for_(WORK_GVK).named("works")
    controller = context.complete(builder, _reconcile, sharded_by=WORK_GVK, workers=3)
    assert controller.options.need_leader_election is True
    assert controller.options.max_concurrent_reconciles == 3
    assert not isinstance(controller.reconciler, _Guard)
