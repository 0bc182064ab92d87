"""The store's encodings cost their size in memory, not the buffer the encoder grew for them."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
from reconcile.cache.store import Indexer

def heap_kib():
    smaps = open("/proc/self/smaps").read()
    at = smaps.find("[heap]")
    return int(smaps[smaps.find("Rss:", at):].split()[1]) if at >= 0 else 0

store = Indexer()
message = "Manifest has been successfully applied. " * 25
before = heap_kib()
for i in range(20000):
    store.upsert({"metadata": {"name": f"w{i:05d}", "namespace": "n"}, "status": {"m": message}})
size = sum(len(v) for v in store._items.values())
print(size // 1024, heap_kib() - before)
"""


def test_stored_encodings_take_about_their_size_of_heap() -> None:
    out = subprocess.run(
        [sys.executable, "-I", "-c", PROBE], capture_output=True, text=True, check=True, cwd="."
    )
    data_kib, heap_kib = map(int, out.stdout.split())
    assert data_kib > 15_000  # 20,000 encodings of about 1 KiB
    # Exact-size copies: about 1.1x the data (bytes headers, the dict); kept as orjson returns
    # them, the heap grew 5-6x the data.
    assert heap_kib < 2 * data_kib, (data_kib, heap_kib)


INDEX_PROBE = """
import tracemalloc
from reconcile.cache.store import Indexer

store = Indexer()
for i in range(20000):
    owner = f"owner-{i:05d}" if i % 10 else "shared"
    store.upsert({"metadata": {"name": f"w{i:05d}", "namespace": "n", "annotations": {"o": owner}}})
tracemalloc.start()
before = tracemalloc.get_traced_memory()[0]
store.add_indexers({"owner": lambda obj: [obj["metadata"]["annotations"]["o"]]})
print((tracemalloc.get_traced_memory()[0] - before) // 20000)
"""


def test_an_index_of_mostly_unique_values_costs_no_set_per_value() -> None:
    out = subprocess.run(
        [sys.executable, "-I", "-c", INDEX_PROBE], capture_output=True, text=True, check=True
    )
    per_object = int(out.stdout)
    # The value's string and its dict entry (about 110 bytes); a set of one key per value
    # (as before) cost 216 bytes more.
    assert per_object < 160, per_object
