"""Engaged selects the clusters a multi-cluster watch covers: the engaged ones, as they come and go.

``Builder.for_/owns/watches(..., cluster=ENGAGED)`` watches the kind in every cluster a provider
engaged (sigs.k8s.io/multicluster-runtime's default, ``WithEngageWithProviderClusters``), not in
the manager's own; ``Engaged(include_host=True)`` adds the manager's own cluster
(``WithEngageWithLocalCluster``), ``names`` or ``predicate`` narrow the engaged ones down.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

__all__ = ["ENGAGED", "Engaged"]


@dataclass(frozen=True, init=False)
class Engaged:
    """Which clusters a watch covers: every engaged cluster that passes ``names`` and ``predicate``.

    Args:
        include_host: also the manager's own cluster (Requests with ``cluster=""``).
        names: only clusters of these names (None: any name).
        predicate: only clusters whose name it accepts (None: any).
    """

    include_host: bool = False
    names: frozenset[str] | None = None
    predicate: Callable[[str], bool] | None = field(default=None, compare=False)

    def __init__(
        self,
        *,
        include_host: bool = False,
        names: Iterable[str] | None = None,
        predicate: Callable[[str], bool] | None = None,
    ) -> None:
        if isinstance(names, str):
            raise TypeError(f"names must be cluster names, not the string {names!r}")
        object.__setattr__(self, "include_host", include_host)
        object.__setattr__(self, "names", None if names is None else frozenset(names))
        object.__setattr__(self, "predicate", predicate)

    def selects(self, name: str) -> bool:
        """Whether the cluster ``name`` ("" is the manager's own) is covered."""
        if name == "":
            return self.include_host
        if self.names is not None and name not in self.names:
            return False
        return self.predicate is None or self.predicate(name)

    def __str__(self) -> str:
        parts = ["engaged clusters"]
        if self.names is not None:
            parts.append(f"named {', '.join(sorted(self.names))}")
        if self.predicate is not None:
            parts.append(f"passing {getattr(self.predicate, '__name__', repr(self.predicate))}")
        if self.include_host:
            parts.append("and the manager's own")
        return " ".join(parts)


ENGAGED: Final = Engaged()
"""Every engaged cluster, not the manager's own."""
