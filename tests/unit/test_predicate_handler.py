"""Predicates filter as documented; handlers map events to the right requests."""

from __future__ import annotations

from typing import Any

import pytest

from reconcile import predicate
from reconcile.event import Event, EventType
from reconcile.gvk import GVK
from reconcile.handler import (
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
)
from reconcile.labels import parse_selector
from reconcile.objects import Obj
from reconcile.reconciler import Request


def _obj(name: str = "a", **meta: Any) -> Obj:
    return {"metadata": {"name": name, "namespace": "ns", **meta}}


def _update(old: dict[str, Any], new: dict[str, Any]) -> Event:
    return Event(EventType.UPDATE, _obj(**new), _obj(**old))


@pytest.mark.parametrize(
    ("name", "old", "new", "passes"),
    [
        ("generation_changed", {"generation": 1}, {"generation": 2}, True),
        ("generation_changed", {"generation": 1, "resourceVersion": "1"}, {"generation": 1}, False),
        ("resource_version_changed", {"resourceVersion": "1"}, {"resourceVersion": "2"}, True),
        ("resource_version_changed", {"resourceVersion": "1"}, {"resourceVersion": "1"}, False),
        ("labels_changed", {"labels": {"a": "1"}}, {"labels": {"a": "2"}}, True),
        ("labels_changed", {"labels": {"a": "1"}}, {"labels": {"a": "1"}}, False),
        ("annotations_changed", {}, {"annotations": {"x": "y"}}, True),
        ("annotations_changed", {"annotations": {"x": "y"}}, {"annotations": {"x": "y"}}, False),
    ],
)
def test_change_predicates_on_updates(
    name: str, old: dict[str, Any], new: dict[str, Any], passes: bool
) -> None:
    check = getattr(predicate, name)
    assert check(_update(old, new)) is passes


@pytest.mark.parametrize("kind", [EventType.CREATE, EventType.DELETE, EventType.GENERIC])
def test_change_predicates_pass_other_events(kind: EventType) -> None:
    event = Event(kind, _obj())
    assert predicate.generation_changed(event)
    assert predicate.labels_changed(event)


def test_combinators_and_label_selector() -> None:
    web = Event(EventType.CREATE, _obj(labels={"app": "web"}))
    db = Event(EventType.CREATE, _obj(labels={"app": "db"}))
    is_web = predicate.label_selector(parse_selector("app=web"))
    assert is_web(web)
    assert not is_web(db)
    assert predicate.not_(is_web)(db)
    assert predicate.or_(is_web, predicate.not_(is_web))(db)
    assert not predicate.and_(is_web, predicate.generation_changed)(db)


def test_enqueue_object_uses_the_events_cluster() -> None:
    event = Event(EventType.CREATE, _obj("x"), cluster="member1")
    assert list(EnqueueRequestForObject().requests(event)) == [Request("x", "ns", "member1")]


def _owned(*references: dict[str, Any]) -> Obj:
    return _obj("pod", ownerReferences=list(references))


RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "1"}


def test_enqueue_owner_takes_the_controller_owner_of_the_kind() -> None:
    handler = EnqueueRequestForOwner(GVK("apps", "v1", "ReplicaSet"))
    controlled = Event(EventType.CREATE, _owned({**RS, "controller": True}))
    assert list(handler.requests(controlled)) == [Request("rs", "ns")]
    merely_owned = Event(EventType.CREATE, _owned(RS))
    assert list(handler.requests(merely_owned)) == []
    other_kind = Event(EventType.CREATE, _owned({**RS, "kind": "Deployment", "controller": True}))
    assert list(handler.requests(other_kind)) == []
    any_owner = EnqueueRequestForOwner(GVK("apps", "v1", "ReplicaSet"), controller_only=False)
    assert list(any_owner.requests(merely_owned)) == [Request("rs", "ns")]


def test_enqueue_owner_maps_old_and_new_owner_on_update() -> None:
    handler = EnqueueRequestForOwner(GVK("apps", "v1", "ReplicaSet"))
    old = _owned({**RS, "controller": True})
    new = _owned({**RS, "name": "rs2", "controller": True})
    event = Event(EventType.UPDATE, new, old)
    assert list(handler.requests(event)) == [Request("rs", "ns"), Request("rs2", "ns")]


def test_map_func_results_are_deduplicated() -> None:
    handler = EnqueueRequestsFromMapFunc(lambda obj: [Request("same", "ns"), Request("same", "ns")])
    event = Event(EventType.UPDATE, _obj(), _obj())
    assert list(handler.requests(event)) == [Request("same", "ns")]
