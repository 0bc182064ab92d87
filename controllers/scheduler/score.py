"""Score ranks the feasible clusters of a binding: where it already runs first, then by free room.

Karmada's only default score plugin is locality: a cluster already in the binding's result scores
100, any other 0, so rescheduling prefers to keep replicas where they are. Clusters are then
ordered by score (descending), available replicas (descending) and name (ascending); that order
drives the spread-constraint selection and the Aggregated division.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from controllers.api import target_clusters
from reconcile import name_of

__all__ = ["LOCALITY_SCORE", "ClusterCandidate", "locality_score", "rank_clusters"]

LOCALITY_SCORE: Final = 100
"""The score of a cluster the binding is already scheduled to."""


@dataclass(frozen=True)
class ClusterCandidate:
    """A feasible cluster with its score and how many more replicas of the binding it can take."""

    name: str
    cluster: Mapping[str, Any]
    score: int
    available_replicas: int


def locality_score(cluster_name: str, binding: Mapping[str, Any]) -> int:
    """100 if the binding is already scheduled to ``cluster_name``, else 0."""
    scheduled = (target.get("name") for target in target_clusters(binding))
    return LOCALITY_SCORE if cluster_name in scheduled else 0


def rank_clusters(
    clusters: Iterable[Mapping[str, Any]],
    binding: Mapping[str, Any],
    available: Mapping[str, int],
) -> list[ClusterCandidate]:
    """The clusters as candidates, best first: score desc, available replicas desc, name asc.

    ``available`` maps cluster names to their available replicas (missing: 0).
    """
    candidates = [
        ClusterCandidate(
            name=name_of(cluster),
            cluster=cluster,
            score=locality_score(name_of(cluster), binding),
            available_replicas=available.get(name_of(cluster), 0),
        )
        for cluster in clusters
    ]
    return sorted(candidates, key=lambda c: (-c.score, -c.available_replicas, c.name))
