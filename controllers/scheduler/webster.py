"""Webster is the Sainte-Laguë apportionment the scheduler divides replicas with, as Karmada does.

Seats (replicas) are handed out one at a time to the party (cluster) with the largest
``votes / (2·seats + 1)``. Ties go to the party with fewer seats, then by name: ascending when the
FNV-32a hash of the binding's resource uid is even (or the uid is empty), descending when it is odd,
so that equal clusters do not always favour the same name across workloads. The seats that surely
go to a party are given at once, so the cost grows with the number of parties, not of seats.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["fnv32a", "names_descending", "webster"]

_FNV32_OFFSET: Final = 0x811C9DC5
_FNV32_PRIME: Final = 0x01000193


def fnv32a(text: str) -> int:
    """The 32-bit FNV-1a hash of the UTF-8 bytes of ``text`` (Go's ``hash/fnv.New32a``)."""
    value = _FNV32_OFFSET
    for byte in text.encode():
        value = ((value ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return value


def names_descending(uid: str) -> bool:
    """Whether Webster ties between equal clusters go to the later name, for resource ``uid``."""
    return bool(uid) and fnv32a(uid) % 2 == 1


@dataclass(slots=True)
class _Party:
    name: str
    votes: int
    seats: int
    descending: bool

    def __lt__(self, other: _Party) -> bool:
        # heapq pops the smallest item, so "less" means "gets the next seat first".
        # Cross-multiplying keeps the comparison of votes/(2·seats+1) exact.
        mine = self.votes * (2 * other.seats + 1)
        theirs = other.votes * (2 * self.seats + 1)
        if mine != theirs:
            return mine > theirs
        if self.seats != other.seats:
            return self.seats < other.seats
        return self.name > other.name if self.descending else self.name < other.name


def _award_clear_seats(parties: list[_Party], seats: int) -> int:
    """Give each party, at once, the seats the one-at-a-time division surely gives it; returns
    how many it gave (the rest, fewer than the number of parties, go one at a time).

    Seat k+1 of a party ranks by votes/(2k+1). Every seat ranking strictly above a threshold x
    is awarded as long as at most ``seats`` of them rank above x, whatever the tie-breaks, and
    those seats come first in the one-at-a-time order, so it resumes from them unchanged. With
    x = total/(2·(seats - n)) at most seats - n/2 rank above it. Without this, 2^31 replicas
    take 2^31 heap operations.
    """
    total, count = sum(p.votes for p in parties), len(parties)
    if total <= 0 or seats <= 2 * count:
        return 0
    numerator, denominator = total, 2 * (seats - count)
    awarded = 0
    for party in parties:
        # Odd m with m·x < votes: m ≤ (votes·denominator - 1) // numerator.
        above = ((party.votes * denominator - 1) // numerator + 1) // 2 if party.votes else 0
        extra = max(0, above - party.seats)
        party.seats += extra
        awarded += extra
    return awarded


def webster(
    seats: int,
    weights: Mapping[str, int],
    *,
    uid: str = "",
    initial: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Divide ``seats`` among the names of ``weights`` with the Webster method.

    ``initial`` holds seats already assigned (a name missing from ``weights`` keeps them but has
    no votes); the result maps every name to its total seats, in name order. ``uid`` picks the
    tie-break direction (see ``names_descending``).

    Raises:
        ValueError: a negative weight or seat count.
    """
    if seats < 0 or any(w < 0 for w in weights.values()):
        raise ValueError("seats and weights must not be negative")
    descending = names_descending(uid)
    start = dict(initial or {})
    names = sorted(set(weights) | set(start))
    heap = [_Party(n, weights.get(n, 0), start.get(n, 0), descending) for n in names]
    if not heap:
        return {}
    seats -= _award_clear_seats(heap, seats)
    heapq.heapify(heap)
    for _ in range(seats):
        party = heapq.heappop(heap)
        party.seats += 1
        heapq.heappush(heap, party)
    return {party.name: party.seats for party in sorted(heap, key=lambda p: p.name)}
