"""GVK identifies a kind of object (group, version, kind) and a resource the apiserver serves.

``GVK`` is what an object says it is (its apiVersion and kind); ``Resource`` is how the apiserver
serves that kind (plural name, namespaced or not, subresources), found through discovery by the
REST mapper. Both are small frozen values, usable as dict keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["GVK", "Resource"]


@dataclass(frozen=True, slots=True)
class GVK:
    """A group, version and kind; the core group is the empty string."""

    group: str
    version: str
    kind: str

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> GVK:
        """Parse ``apps/v1`` (or ``v1`` for the core group) and a kind."""
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> GVK:
        """The GVK an object declares in its apiVersion and kind.

        Raises:
            ValueError: the object lacks apiVersion or kind.
        """
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not api_version or not kind:
            raise ValueError("object has no apiVersion/kind")
        return cls.from_api_version(str(api_version), str(kind))

    @property
    def api_version(self) -> str:
        """``group/version``, or just ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"


@dataclass(frozen=True, slots=True)
class Resource:
    """How the apiserver serves one GVK: its plural path segment, scope and subresources."""

    gvk: GVK
    plural: str
    namespaced: bool
    subresources: frozenset[str] = frozenset()
    verbs: frozenset[str] = frozenset()

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path of the collection, or of one object when ``name`` is given."""
        root = f"/apis/{self.gvk.group}/{self.gvk.version}" if self.gvk.group else "/api/v1"
        if self.namespaced and namespace:
            root += f"/namespaces/{namespace}"
        root += f"/{self.plural}"
        return f"{root}/{name}" if name else root
