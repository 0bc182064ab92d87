"""Store is the thread-free, indexed map of objects an informer keeps in sync with the apiserver.

Objects are keyed ``namespace/name`` (``name`` when cluster-scoped). Indexers map an index name to
a function giving the values an object is filed under; ``namespace`` is always present, and a
``label:<key>`` index (objects by the value of one label) is built the first time a query asks
for it. Indexes follow every add, update, delete and replace, and an indexer added later is
backfilled.

Objects are stored encoded (compact JSON bytes) and decoded on every read, so each reader gets an
object of its own to change as it likes. That is cheaper both ways than keeping decoded objects and
copying them on read as controller-runtime's cache does: a decoded Kubernetes object takes four to
five times the memory of its JSON in CPython (a Work of 3 KB is 14 KB of dicts and strings), and
decoding it takes about a third of the time of a deep copy. Index functions see the decoded object
when it is stored; the namespace index is read from the key, so objects stored from their encodings
(``upsert_encoded``) are decoded only for the other indexes.

A store made with ``compress=True`` keeps each encoding deflated against a preset dictionary: the
first object it stored of at least ``MIN_DICTIONARY`` bytes. Objects of one kind repeat each other's
keys and most values (a Work's manifest, a Deployment's defaulted pod template), so each is stored
as little more than what makes it different: 10-25x smaller than its JSON, for about 8 us more per
write and 4 us more per read (docs/benchmarks.md). It is for caches whose objects are many.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import zlib
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Final

import orjson

from reconcile.objects import Obj, object_key

__all__ = [
    "LABEL_INDEX_PREFIX",
    "MIN_DICTIONARY",
    "NAMESPACE_INDEX",
    "IndexFunc",
    "Indexer",
    "decode",
    "encode",
    "release_heap",
]

IndexFunc = Callable[[Obj], Iterable[str]]

NAMESPACE_INDEX: Final = "namespace"
LABEL_INDEX_PREFIX: Final = "label:"


def _namespace_index(obj: Obj) -> list[str]:
    # What the namespace index means; the Indexer computes it from the key (_namespace_of_key).
    namespace = obj["metadata"].get("namespace")
    return [namespace] if namespace else []


def _namespace_of_key(key: str) -> list[str]:
    # Neither names nor namespaces may contain "/": the key says what _namespace_index would.
    namespace, slash, _ = key.partition("/")
    return [namespace] if slash else []


def _label_index(key: str) -> IndexFunc:
    def values(obj: Obj) -> list[str]:
        labels = obj["metadata"].get("labels") or {}
        return [labels[key]] if key in labels else []

    return values


def encode(obj: Obj) -> bytes:
    """``obj`` in the form the store keeps it: compact JSON, in a block of its exact size."""
    # orjson returns its output in the buffer it grew while writing, shrunk in place: glibc keeps
    # the whole block, so kept as is an encoding of 1.5 KiB held about 8 KiB of heap (50,000 Work
    # encodings: 389 MiB of heap for 72 MiB of JSON). An exact-size copy costs 0.2 us.
    return memoryview(orjson.dumps(obj)).tobytes()


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    library = ctypes.CDLL(name) if name else None
    trim = getattr(library, "malloc_trim", None)  # glibc only
    return trim if callable(trim) else None


_TRIM: Final = _malloc_trim()


def release_heap() -> None:
    """Give the free pages inside the C heap back to the system (glibc's malloc_trim; a no-op
    elsewhere).

    A store filled from a large list keeps its encodings between the freed blocks of the list's
    decoded objects, so the heap cannot shrink from its top: 10,000 ConfigMaps left 56 MiB of
    RSS, 30 MiB after a trim. Reflectors call it after handing a large list to their store.
    """
    if _TRIM is not None:
        _TRIM(0)


def decode(encoded: bytes) -> Obj:
    """A fresh object from its stored form (``encode``)."""
    obj: Obj = orjson.loads(encoded)
    return obj


MIN_DICTIONARY: Final = 256
"""The least size of an encoding a compressed store takes as its dictionary: a smaller one (an
object with hardly any fields) would leave the objects after it with little to refer to."""

_WINDOW_BITS: Final = 13
_MEMORY_LEVEL: Final = 5
# An 8 KiB window and a small hash: the compressor's state is 48 KiB (the default's 256 KiB is
# above glibc's mmap threshold, so each object paid for a mapping) and takes a third of the time,
# for the same size (most objects are smaller than the window; the dictionary is at its end).


class _Deflate:
    """Encodings deflated against the store's dictionary; an encoding is kept as it is while
    there is no dictionary yet or when deflating does not make it smaller. A stored value is JSON
    when it starts with ``{``, which no zlib stream does (its first byte is 0x58 here)."""

    def __init__(self) -> None:
        self._dictionary: bytes | None = None

    def pack(self, encoded: bytes) -> bytes:
        if self._dictionary is None:
            if len(encoded) < MIN_DICTIONARY:
                return encoded
            self._dictionary = encoded
        deflate = zlib.compressobj(
            1, zlib.DEFLATED, _WINDOW_BITS, _MEMORY_LEVEL, zlib.Z_DEFAULT_STRATEGY, self._dictionary
        )
        packed = deflate.compress(encoded) + deflate.flush()
        return packed if len(packed) < len(encoded) else encoded

    def unpack(self, stored: bytes) -> bytes:
        if stored[:1] == b"{" or self._dictionary is None:
            return stored
        return zlib.decompressobj(_WINDOW_BITS, zdict=self._dictionary).decompress(stored)


_Filed = str | set[str]
"""The keys filed under one index value: the key itself while it is the only one. Most values of
most indexes (an owner, a sharding key) file one object, and a set of one costs 216 bytes."""


def _file(index: dict[str, _Filed], value: str, key: str) -> None:
    filed = index.get(value)
    if filed is None or filed == key:
        index[value] = key
    elif isinstance(filed, str):
        index[value] = {filed, key}
    else:
        filed.add(key)


def _unfile(index: dict[str, _Filed], value: str, key: str) -> None:
    filed = index.get(value)
    if filed is None:
        return
    if isinstance(filed, str):
        if filed == key:
            del index[value]
        return
    filed.discard(key)
    if len(filed) == 1:
        index[value] = next(iter(filed))
    elif not filed:
        del index[value]


def _filed_keys(filed: _Filed | None) -> Collection[str]:
    if filed is None:
        return ()
    return (filed,) if isinstance(filed, str) else filed


class Indexer:
    """Objects by key plus secondary indexes; all operations are synchronous and O(values).

    Every object returned is decoded afresh: the caller's own, not shared with the store.
    ``compress``: keep the encodings deflated against a dictionary (see the module).
    """

    def __init__(
        self, indexers: Mapping[str, IndexFunc] | None = None, *, compress: bool = False
    ) -> None:
        self._items: dict[str, bytes] = {}
        self._deflate = _Deflate() if compress else None
        self._indexers: dict[str, IndexFunc] = {NAMESPACE_INDEX: _namespace_index}
        self._indices: dict[str, dict[str, _Filed]] = {NAMESPACE_INDEX: {}}
        self.add_indexers(indexers or {})

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def get(self, key: str) -> Obj | None:
        """The object stored under ``key``, or None."""
        stored = self._items.get(key)
        return None if stored is None else self._decode(stored)

    def values(self) -> list[Obj]:
        """Every stored object: each one decoded, so prefer an index to a walk over all."""
        return [self._decode(stored) for stored in self._items.values()]

    def encoded_size(self) -> int:
        """The bytes the stored objects take, as kept (deflated in a compressed store)."""
        return sum(len(stored) for stored in self._items.values())

    def _decode(self, stored: bytes) -> Obj:
        return decode(stored if self._deflate is None else self._deflate.unpack(stored))

    def keys(self) -> list[str]:
        """Every key."""
        return list(self._items)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes, filing every object already stored under them.

        Raises:
            ValueError: an index of that name exists already.
        """
        for name, func in indexers.items():
            if name in self._indexers:
                raise ValueError(f"indexer {name!r} already exists")
            self._indexers[name] = func
            index: dict[str, _Filed] = {}
            self._indices[name] = index
            for key, stored in self._items.items():
                for value in func(self._decode(stored)):
                    _file(index, value, key)

    def index_names(self) -> list[str]:
        """The names of all indexes."""
        return list(self._indexers)

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        """Objects filed under ``value`` in ``index_name``.

        Raises:
            KeyError: no such index.
        """
        return [self._decode(self._items[key]) for key in self.index_keys(index_name, value)]

    def index_keys(self, index_name: str, value: str) -> list[str]:
        """Keys filed under ``value`` in ``index_name``, sorted.

        Raises:
            KeyError: no such index.
        """
        if index_name not in self._indices:
            raise KeyError(f"no index named {index_name!r}")
        return sorted(_filed_keys(self._indices[index_name].get(value)))

    def index_values(self, index_name: str) -> list[str]:
        """The values ``index_name`` files objects under, sorted (client-go's
        ListIndexFuncValues); a value is dropped with its last object.

        Raises:
            KeyError: no such index.
        """
        if index_name not in self._indices:
            raise KeyError(f"no index named {index_name!r}")
        return sorted(self._indices[index_name])

    def label_keys(self, key: str, value: str) -> list[str]:
        """Keys of the objects whose label ``key`` is ``value``, sorted; the ``label:<key>`` index
        is built on the first call for ``key`` and kept current from then on."""
        return self.index_keys(self._label_index(key), value)

    def label_count(self, key: str, value: str) -> int:
        """How many objects have label ``key`` set to ``value``, in O(1); builds the index as
        ``label_keys`` does."""
        return len(_filed_keys(self._indices[self._label_index(key)].get(value)))

    def _label_index(self, key: str) -> str:
        name = LABEL_INDEX_PREFIX + key
        if name not in self._indexers:
            self.add_indexers({name: _label_index(key)})
        return name

    def upsert(self, obj: Obj) -> Obj | None:
        """Store ``obj`` under its key; returns the object it replaced, if any.

        The store keeps ``obj``'s encoding, not ``obj``: changing ``obj`` afterwards does not
        change what is stored.
        """
        return self._put(object_key(obj), encode(obj), obj)

    def upsert_encoded(self, key: str, encoded: bytes, obj: Obj | None = None) -> Obj | None:
        """Store an object given in its stored form (``encode``) under its key (``object_key``);
        returns the object it replaced, if any.

        ``obj``, when given, is ``encoded`` decoded, for the index functions. Without it the
        object is decoded only when an index other than ``namespace`` needs it: a store filled
        from encodings made as they arrived never holds their decoded forms at once.
        """
        return self._put(key, encoded, obj)

    def _put(self, key: str, encoded: bytes, obj: Obj | None) -> Obj | None:
        old = self.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = encoded if self._deflate is None else self._deflate.pack(encoded)
        self._index(key, encoded if obj is None else obj)
        return old

    def delete(self, key: str) -> Obj | None:
        """Remove the object under ``key``; returns it, or None when absent."""
        stored = self._items.pop(key, None)
        if stored is None:
            return None
        old = self._decode(stored)
        self._unindex(key, old)
        return old

    def _values_of(self, name: str, key: str, obj: Obj) -> Iterable[str]:
        if name == NAMESPACE_INDEX:
            return _namespace_of_key(key)
        return self._indexers[name](obj)

    def _index(self, key: str, obj: Obj | bytes) -> None:
        for name, index in self._indices.items():
            if name == NAMESPACE_INDEX:
                values: Iterable[str] = _namespace_of_key(key)
            else:
                if isinstance(obj, bytes):
                    obj = decode(obj)  # once, for every index that needs it
                values = self._indexers[name](obj)
            for value in values:
                _file(index, value, key)

    def _unindex(self, key: str, obj: Obj) -> None:
        for name, index in self._indices.items():
            for value in self._values_of(name, key, obj):
                _unfile(index, value, key)
