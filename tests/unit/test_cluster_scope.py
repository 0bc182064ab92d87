"""ClusterScope: which Clusters a process serves, by syncMode (Push) or by name (an agent)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import SYNC_MODE_PULL, SYNC_MODE_PUSH, sync_mode
from controllers.clusterscope import ClusterScope


def cluster(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def test_sync_mode_is_pull_only_when_it_says_so() -> None:
    assert sync_mode(cluster("a", syncMode="Pull")) == SYNC_MODE_PULL
    assert sync_mode(cluster("a", syncMode="Push")) == SYNC_MODE_PUSH
    assert sync_mode(cluster("a")) == SYNC_MODE_PUSH
    assert sync_mode({"metadata": {"name": "a"}, "spec": None}) == SYNC_MODE_PUSH


def test_push_serves_every_cluster_not_in_pull_mode() -> None:
    scope = ClusterScope.push()
    assert scope.serves(cluster("a", syncMode="Push"))
    assert scope.serves(cluster("a"))
    assert not scope.serves(cluster("a", syncMode="Pull"))


def test_only_serves_its_own_cluster_whatever_its_mode() -> None:
    scope = ClusterScope.only("mine")
    assert scope.serves(cluster("mine", syncMode="Pull"))
    assert scope.serves(cluster("mine", syncMode="Push"))
    assert not scope.serves(cluster("other"))
    with pytest.raises(ValueError, match="cluster name"):
        ClusterScope.only("")


def test_serves_name_looks_up_only_when_the_name_does_not_tell() -> None:
    looked: list[str] = []
    clusters = {"pull": cluster("pull", syncMode="Pull"), "push": cluster("push")}

    def lookup(name: str) -> dict[str, Any] | None:
        looked.append(name)
        return clusters.get(name)

    push = ClusterScope.push()
    assert not push.serves_name("pull", lookup)
    assert push.serves_name("push", lookup)
    # Nothing says a missing Cluster is Pull: its Works are cleaned up as before.
    assert push.serves_name("gone", lookup)
    assert looked == ["pull", "push", "gone"]
    only = ClusterScope.only("pull")
    assert only.serves_name("pull", lookup)
    assert not only.serves_name("push", lookup)
    assert looked == ["pull", "push", "gone"]
    assert (str(push), str(only)) == ("push clusters", "cluster pull")
