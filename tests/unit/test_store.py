"""Indexer: keys, the namespace index, custom indexes, backfill, and index upkeep on change."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from reconcile.cache.store import Indexer, encode
from reconcile.objects import Obj, deep_copy, object_key


def _cm(name: str, namespace: str | None = "default", **labels: str) -> Obj:
    meta: Obj = {"name": name, "labels": labels}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def _by_app(obj: Obj) -> list[str]:
    app = obj["metadata"]["labels"].get("app")
    return [app] if app else []


def test_keys_are_namespace_slash_name_or_name() -> None:
    assert object_key(_cm("a")) == "default/a"
    assert object_key(_cm("node-1", namespace=None)) == "node-1"


def test_namespace_index_is_built_in() -> None:
    store = Indexer()
    for obj in (_cm("a", "x"), _cm("b", "x"), _cm("c", "y")):
        store.upsert(obj)
    assert store.index_keys("namespace", "x") == ["x/a", "x/b"]
    assert [o["metadata"]["name"] for o in store.by_index("namespace", "y")] == ["c"]


def test_custom_index_follows_updates_and_deletes() -> None:
    store = Indexer({"app": _by_app})
    store.upsert(_cm("a", app="web"))
    store.upsert(_cm("b", app="web"))
    assert store.index_keys("app", "web") == ["default/a", "default/b"]
    store.upsert(_cm("a", app="db"))
    assert store.index_keys("app", "web") == ["default/b"]
    assert store.index_keys("app", "db") == ["default/a"]
    store.delete("default/b")
    assert store.index_keys("app", "web") == []
    assert len(store) == 1


def test_an_index_added_later_is_backfilled() -> None:
    store = Indexer()
    store.upsert(_cm("a", app="web"))
    store.add_indexers({"app": _by_app})
    assert store.index_keys("app", "web") == ["default/a"]
    with pytest.raises(ValueError, match="already exists"):
        store.add_indexers({"app": _by_app})


def test_unknown_index_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="nope"):
        Indexer().by_index("nope", "x")


def test_upsert_returns_the_replaced_object_and_delete_the_removed_one() -> None:
    store = Indexer()
    first, second = _cm("a", v="1"), _cm("a", v="2")
    assert store.upsert(first) is None
    assert store.upsert(second) == first
    assert store.delete("default/a") == second
    assert store.delete("default/a") is None


def test_every_read_is_the_readers_own_and_storing_keeps_a_snapshot() -> None:
    store = Indexer()
    stored = _cm("a", v="1")
    store.upsert(stored)
    stored["metadata"]["labels"]["v"] = "changed after upsert"
    got = store.get("default/a")
    assert got is not None
    assert got["metadata"]["labels"] == {"v": "1"}
    got["metadata"]["labels"]["v"] = "changed by a reader"
    for read in (
        store.get("default/a"),
        store.values()[0],
        store.by_index("namespace", "default")[0],
    ):
        assert read is not None
        assert read["metadata"]["labels"] == {"v": "1"}
    assert store.label_keys("v", "1") == ["default/a"]


def test_deep_copy_is_independent_and_equal() -> None:
    original: dict[str, Any] = {"a": [1, {"b": [2, 3]}], "c": {"d": None, "e": "x"}}
    copied = deep_copy(original)
    assert copied == original == copy.deepcopy(original)
    copied["a"][1]["b"].append(4)
    assert original["a"][1]["b"] == [2, 3]


def test_a_label_index_is_built_on_first_use_and_follows_every_change() -> None:
    store = Indexer()
    store.upsert({"metadata": {"name": "a", "labels": {"app": "web"}}})
    store.upsert({"metadata": {"name": "b", "labels": {"app": "db"}}})
    store.upsert({"metadata": {"name": "c"}})
    assert store.label_keys("app", "web") == ["a"]
    store.upsert({"metadata": {"name": "a", "labels": {"app": "db"}}})
    store.upsert({"metadata": {"name": "c", "labels": {"app": "web"}}})
    store.delete("b")
    assert store.label_keys("app", "web") == ["c"]
    assert store.label_keys("app", "db") == ["a"]
    assert store.label_keys("tier", "x") == []


def test_label_indexes_stay_exact_and_drop_emptied_values_under_random_churn() -> None:
    rng = random.Random(13)
    values = ["", "x", "y", "a.b_c-d", "Z9"]  # the empty value and every character a value has
    store, truth = Indexer(), dict[str, str | None]()
    assert store.label_keys("app", "x") == []  # the index exists before any object
    for _ in range(3000):
        name = f"o{rng.randrange(60)}"
        if rng.random() < 0.2:
            store.delete(f"default/{name}")
            truth.pop(name, None)
            continue
        labels = {"app": rng.choice(values)} if rng.random() < 0.7 else {}
        store.upsert(_cm(name, **labels))
        truth[name] = labels.get("app")
    for value in values:
        expected = sorted(f"default/{n}" for n, v in truth.items() if v == value)
        assert store.label_keys("app", value) == expected
    present = {v for v in truth.values() if v is not None}
    assert sorted(store.index_values("label:app")) == sorted(present)
    for name in list(truth):
        store.delete(f"default/{name}")
    assert store.index_values("label:app") == []
    assert store.index_values("namespace") == []


def test_an_encoded_upsert_is_indexed_like_a_decoded_one() -> None:
    decoded = Indexer({"app": _by_app})
    encoded = Indexer({"app": _by_app})
    objects = [_cm("a", "x", app="web"), _cm("b", "y", app="db"), _cm("node", None, app="web")]
    for obj in objects:
        decoded.upsert(obj)
        assert encoded.upsert_encoded(object_key(obj), encode(obj)) is None
    for store in (decoded, encoded):
        assert store.index_keys("namespace", "x") == ["x/a"]
        assert store.index_values("namespace") == ["x", "y"]
        assert store.index_keys("app", "web") == ["node", "x/a"]
    changed = _cm("a", "x", app="db")
    assert encoded.upsert_encoded("x/a", encode(changed), changed) == objects[0]
    assert encoded.index_keys("app", "db") == ["x/a", "y/b"]
    assert encoded.delete("x/a") == changed
    assert encoded.index_values("namespace") == ["y"]
