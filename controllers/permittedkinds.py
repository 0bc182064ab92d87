"""Permittedkinds is which kinds this process may use as resource templates, for every controller.

The detector's discovery (``controllers.detector.discovery``) asks the apiserver, with
SelfSubjectAccessReviews, whether each kind the host serves may be got, listed, watched and patched
in every namespace, and publishes each round's answer to the Context's ``PermittedKinds``
(``context.permitted_kinds``). Other controllers consult it instead of asking again per object:
the dependencies distributor does not request a dependency of a kind RBAC does not let it read,
and says so in an Event. Subscribers are told which kinds became permitted, so work waiting for
a permission is picked up within a discovery round of the role being granted.

A kind is *permitted* (the detector watches it: its informer is in the manager's cache),
*denied* (with the verb RBAC refused) or *unknown* (not reviewed: the detector skips it, the host
does not serve it, or no round has been published yet).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

import structlog

from reconcile import GVK

__all__ = ["READ_VERBS", "Denial", "PermittedKinds"]

READ_VERBS: Final = ("get", "list", "watch")
"""What reading a kind takes: its objects by name, by selector, and an informer of them."""

log = structlog.get_logger("controllers.permittedkinds")


@dataclass(frozen=True)
class Denial:
    """Why a kind may not be used: ``verb`` on ``resource`` (its plural) of ``group`` refused."""

    group: str
    resource: str
    verb: str

    def permission(self) -> str:
        """The missing permission as RBAC names it: ``get secrets``, ``list widgets.example.io``."""
        resource = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {resource}"


Listener = Callable[[frozenset[GVK]], None]


@dataclass
class PermittedKinds:
    """The last published answer of the detector's access reviews (see the module docstring)."""

    permitted: frozenset[GVK] = frozenset()
    denied: Mapping[GVK, Denial] = field(default_factory=dict)
    expected: bool = False
    """Whether a discovery publishes here (the detector runs in this process)."""
    published: bool = False
    """Whether a round has been published: until then every kind is unknown."""
    _listeners: list[Listener] = field(default_factory=list, repr=False)

    def expect(self) -> None:
        """Announce that a discovery will publish here (called when the detector is set up)."""
        self.expected = True

    def pending(self) -> bool:
        """Whether a discovery is expected and has not published its first round yet."""
        return self.expected and not self.published

    def denial(self, gvk: GVK, verbs: Iterable[str] = READ_VERBS) -> Denial | None:
        """Why ``gvk`` may not be used for ``verbs``: the denial when its refused verb is among
        them, else None (permitted, unknown, or refused only a verb the caller does not use)."""
        denial = self.denied.get(gvk)
        return denial if denial is not None and denial.verb in tuple(verbs) else None

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` with the kinds each later round newly permits (see ``publish``)."""
        self._listeners.append(listener)

    def publish(self, permitted: Iterable[GVK], denied: Mapping[GVK, Denial]) -> None:
        """Record a discovery round; tell subscribers which kinds it newly permits (none on the
        first round: nothing was held back for a permission before any was known)."""
        now = frozenset(permitted)
        added = now - self.permitted if self.published else frozenset()
        self.permitted, self.denied, self.published = now, dict(denied), True
        if not added:
            return
        for listener in list(self._listeners):
            try:
                listener(added)
            except Exception as error:  # one subscriber's bug must not stop discovery
                log.error("a permitted-kinds subscriber failed", error=str(error))
