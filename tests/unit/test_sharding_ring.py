"""The ring's rendezvous hashing and the membership's expiry, without an apiserver."""

from __future__ import annotations

from collections import Counter

import pytest

from reconcile import GVK
from reconcile.sharding import (
    Membership,
    Ring,
    ShardedKind,
    owner,
    shard_labels,
    without_sharding_labels,
)
from tests.builders import FakeClock

CONFIGMAP = GVK("", "v1", "ConfigMap")
KEYS = [f"ns/object-{index}" for index in range(3000)]


def test_rendezvous_spreads_keys_evenly_and_a_new_shard_takes_only_its_own() -> None:
    before = {key: owner(["a", "b", "c"], key) for key in KEYS}
    counts = Counter(before.values())
    assert all(800 < counts[shard] < 1200 for shard in "abc"), counts
    after = {key: owner(["a", "b", "c", "d"], key) for key in KEYS}
    moved = [key for key in KEYS if before[key] != after[key]]
    assert all(after[key] == "d" for key in moved)
    assert 600 < len(moved) < 900, len(moved)  # about a quarter
    removed = {key: owner(["a", "c"], key) for key in KEYS}
    assert all(removed[key] == before[key] for key in KEYS if before[key] != "b")


def test_a_weight_scales_a_shards_share_and_moves_only_its_own_keys() -> None:
    shards = ["a", "b", "c"]
    plain = {key: owner(shards, key) for key in KEYS}
    assert {key: owner(shards, key, {"a": 1.0}) for key in KEYS} == plain, "weight 1 is none"
    lighter = {key: owner(shards, key, {"a": 0.4}) for key in KEYS}
    counts = Counter(lighter.values())
    # Expected shares 0.4 / 2.4 and 1 / 2.4 of 3,000: 500 and 1,250.
    assert 400 < counts["a"] < 600, counts
    assert all(1100 < counts[shard] < 1400 for shard in "bc"), counts
    moved = [key for key in KEYS if plain[key] != lighter[key]]
    assert all(plain[key] == "a" for key in moved), "only the lighter shard gives keys away"
    assert all(owner(shards, key, {"a": 0.0}) != "a" for key in KEYS)
    assert owner(["a"], "ns/x", {"a": 0.0}) == "a", "alone, it owns everything still"


def test_no_shard_owns_nothing() -> None:
    assert owner([], "ns/x") is None


def test_ring_names_are_label_safe_and_kinds_unique() -> None:
    with pytest.raises(ValueError, match="DNS label"):
        Ring("Bad_Name", kinds=(ShardedKind(CONFIGMAP),))
    with pytest.raises(ValueError, match="each kind once"):
        Ring("r", kinds=(ShardedKind(CONFIGMAP), ShardedKind(CONFIGMAP)))
    ring = Ring("templates", kinds=(ShardedKind(CONFIGMAP),))
    assert ring.shard_label == "shard.sharding.reconcile.io/templates"
    assert ring.selector("r0") == "shard.sharding.reconcile.io/templates=r0"


def _lease(name: str, holder: str, renew: str, duration: int = 10) -> dict[str, object]:
    spec = {"holderIdentity": holder, "renewTime": renew, "leaseDurationSeconds": duration}
    return {"metadata": {"name": name}, "spec": spec}


def test_a_shard_is_live_until_its_lease_goes_unchanged_for_its_duration() -> None:
    clock = FakeClock()
    members = Membership(clock=clock)
    members.observe([_lease("a", "a", "t0"), _lease("b", "b", "t0")])
    assert members.live() == ("a", "b")
    clock.time = 6.0
    members.observe([_lease("a", "a", "t1"), _lease("b", "b", "t0")])  # only a renewed
    assert members.next_expiry() == pytest.approx(4.0)
    clock.time = 10.5
    assert members.live() == ("a",)
    members.observe([_lease("a", "", "t2")])  # released: gone at once, b forgotten
    assert members.live() == ()
    assert members.next_expiry() is None


def test_kinds_added_later_reach_every_subscriber_once() -> None:
    ring = Ring("templates")
    heard: list[GVK] = []
    ring.subscribe(lambda kind: heard.append(kind.gvk))
    assert ring.add(ShardedKind(CONFIGMAP))
    assert not ring.add(ShardedKind(CONFIGMAP))
    assert heard == [CONFIGMAP]
    with pytest.raises(ValueError, match="another key"):
        ring.add(ShardedKind(CONFIGMAP, key=lambda obj: "x"))


def test_children_inherit_shard_labels_and_copies_drop_them() -> None:
    ring = Ring("templates")
    labels = {ring.shard_label: "r1", ring.drain_label: "true", "app": "web"}
    assert shard_labels({"metadata": {"labels": labels}}) == {ring.shard_label: "r1"}
    assert shard_labels({"metadata": {}}) == {}
    assert without_sharding_labels(labels) == {"app": "web"}
