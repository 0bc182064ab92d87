"""FakeClient is an in-memory apiserver with the Client interface, for unit tests of controllers.

It is a ``Client`` (same methods, signatures, answers and errors) that keeps objects in memory and
follows the apiserver's rules where controllers notice them, which controller-runtime's fake client
does not:

- a kind registry (plural, scope, status and scale subresources) of common built-in kinds, extended
  by ``install_crds`` from CRD manifests; an unknown kind raises ``NoKindMatch``;
- one resourceVersion counter for every write; a stale resourceVersion is a 409 Conflict; a write
  that changes nothing keeps the version and sends no event;
- uid, creationTimestamp, and metadata.generation bumped when the spec changes;
- status subresources: writes of the object keep its status, ``update_status`` changes only status;
- finalizers: delete marks the object (deletionTimestamp) until its last finalizer is removed;
- merge, JSON and strategic merge patches, server-side apply, the scale subresource;
- lists with selectors, consistent pages and exact past versions, rebuilt from an event log; lists
  and watches with ``=``/``in`` label requirements, a namespace or ``=`` field selectors look only
  at the objects indexes allow (built on first use), so they cost per match, not per object;
- watches replayed from that log and then live, so real informers (``SharedInformer``, ``Cache``)
  run on the fake unchanged; a watch from a version older than the log gets a 410 ERROR event.

Simplified on purpose:

- no validation beyond object names, no defaulting, no admission: CRD schemas are not applied and
  namespaces need not exist;
- strategic merge: maps merge, lists whose items are all objects with a ``name`` merge by name
  (patched items first, in patch order, then the others) and ``$patch: delete`` drops an item;
  other lists are replaced and other ``$`` directives ignored. Custom resources refuse it (415);
- server-side apply merges the body like a strategic merge patch, creating a missing object; field
  ownership (managedFields, conflicts between managers, removing fields a manager stopped
  applying) is not modelled, and ``force`` is accepted without effect;
- no garbage collector and no namespace controller: propagation policies and grace periods are
  accepted and ignored, objects without finalizers go at once, a namespace's objects stay;
- no conversion between the versions of a CRD: objects are served with the version asked for;
- watches send no periodic bookmarks; a successful immediate delete answers a Status.

``FakeClusters`` holds several FakeClients by cluster name and engages them in a multi-cluster
manager (it is a ``reconcile.multicluster.Provider``), for fast tests of multi-cluster reconcilers.
"""

from testenv.fake.client import FakeClient
from testenv.fake.clusters import FakeClusters
from testenv.fake.registry import BUILTIN_KINDS, FakeKind, ScalePaths
from testenv.fake.store import DEFAULT_WATCH_HISTORY

__all__ = [
    "BUILTIN_KINDS",
    "DEFAULT_WATCH_HISTORY",
    "FakeClient",
    "FakeClusters",
    "FakeKind",
    "ScalePaths",
]
