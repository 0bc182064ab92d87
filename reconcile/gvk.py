"""GVK identifies a kind of object (group, version, kind) and a resource the apiserver serves.

``GVK`` is what an object says it is (its apiVersion and kind); ``Resource`` is how the apiserver
serves that kind (plural name, namespaced or not, subresources), found through discovery by the
REST mapper. Both are small frozen values, usable as dict keys.

``GVK`` is generic in the type of the objects of its kind, for type checkers only:
``GVK[Deployment]("apps", "v1", "Deployment")`` is the same value as the unparameterised one
(equal, same hash), but a client's ``get`` of it is typed as returning a ``Deployment``. An
unparameterised GVK types its objects as ``dict[str, Any]``, as every object is at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

__all__ = ["GVK", "ObjectT", "Resource"]

if TYPE_CHECKING:
    # A TypeVar default (PEP 696) is Python 3.13's; type checkers take typing_extensions' now.
    from typing_extensions import TypeVar as DefaultedTypeVar

    ObjectT = DefaultedTypeVar(
        "ObjectT", bound=Mapping[str, Any], default=dict[str, Any], covariant=True
    )
    """The type of a kind's objects: a TypedDict for a typed kind, else ``dict[str, Any]``."""
else:
    ObjectT = TypeVar("ObjectT", bound=Mapping[str, Any], covariant=True)


@dataclass(frozen=True, slots=True)
class GVK(Generic[ObjectT]):
    """A group, version and kind; the core group is the empty string."""

    group: str
    version: str
    kind: str

    if not TYPE_CHECKING:

        def __class_getitem__(cls, _item: object) -> type[GVK]:
            # GVK[Deployment] is the class itself at run time: typing's alias would try to
            # record __orig_class__ on the frozen, slotted instance, and typing needs nothing.
            return cls

    @staticmethod
    def from_api_version(api_version: str, kind: str) -> GVK:
        """Parse ``apps/v1`` (or ``v1`` for the core group) and a kind."""
        group, _, version = api_version.rpartition("/")
        return GVK(group, version, kind)

    @staticmethod
    def of(obj: Mapping[str, Any]) -> GVK:
        """The GVK an object declares in its apiVersion and kind.

        Raises:
            ValueError: the object lacks apiVersion or kind.
        """
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not api_version or not kind:
            raise ValueError("object has no apiVersion/kind")
        return GVK.from_api_version(str(api_version), str(kind))

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
