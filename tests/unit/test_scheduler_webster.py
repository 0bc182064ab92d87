"""The Webster (Sainte-Laguë) division and its FNV-32a tie-break, as KARMADA.md specifies them."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controllers.scheduler import fnv32a, names_descending, webster
from tests.fuzz.strategies import within


def uid_with_parity(odd: bool) -> str:
    """A uid whose FNV-32a hash is odd (or even), found by trying uids in turn."""
    return next(uid for i in range(1000) if fnv32a(uid := f"uid-{i}") % 2 == (1 if odd else 0))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", 0x811C9DC5, id="the empty string hashes to the offset basis"),
        pytest.param("a", 0xE40C292C, id="one byte matches the published FNV-1a vector"),
        pytest.param("foobar", 0xBF9CF968, id="several bytes match the published FNV-1a vector"),
    ],
)
def test_fnv32a_matches_the_reference_vectors(text: str, expected: int) -> None:
    assert fnv32a(text) == expected


@pytest.mark.parametrize(
    ("seats", "weights", "expected"),
    [
        pytest.param(9, {"a": 1, "b": 2}, {"a": 3, "b": 6}, id="9 at 1:2 gives 3:6"),
        pytest.param(9, {"a": 1, "b": 3}, {"a": 2, "b": 7}, id="9 at 1:3 gives 2:7"),
        pytest.param(
            12, {"a": 18, "b": 12, "c": 6}, {"a": 6, "b": 4, "c": 2}, id="12 at 18:12:6 gives 6:4:2"
        ),
        pytest.param(
            8,
            {"A": 100000, "B": 80000, "C": 30000, "D": 20000},
            {"A": 3, "B": 3, "C": 1, "D": 1},
            id="the Sainte-Lague example of Wikipedia gives 3:3:1:1",
        ),
        pytest.param(
            3, {"member1": 2, "member2": 1}, {"member1": 2, "member2": 1}, id="3 at 2:1 gives 2:1"
        ),
        pytest.param(
            9, {"member1": 2, "member2": 1}, {"member1": 6, "member2": 3}, id="9 at 2:1 gives 6:3"
        ),
        pytest.param(0, {"a": 1, "b": 1}, {"a": 0, "b": 0}, id="no seats leaves everyone empty"),
        pytest.param(
            5, {"a": 1, "b": 0}, {"a": 5, "b": 0}, id="a party without votes gets no seat"
        ),
    ],
)
def test_webster_divides_seats_by_weight(
    seats: int, weights: dict[str, int], expected: dict[str, int]
) -> None:
    assert webster(seats, weights) == expected


@pytest.mark.parametrize(
    ("odd", "seats", "expected"),
    [
        pytest.param(False, 1, {"m1": 1, "m2": 0, "m3": 0}, id="an even hash gives the tie to m1"),
        pytest.param(True, 1, {"m1": 0, "m2": 0, "m3": 1}, id="an odd hash gives the tie to m3"),
        pytest.param(False, 4, {"m1": 2, "m2": 1, "m3": 1}, id="an even hash puts the extra on m1"),
        pytest.param(True, 4, {"m1": 1, "m2": 1, "m3": 2}, id="an odd hash puts the extra on m3"),
    ],
)
def test_ties_follow_the_parity_of_the_uid_hash(
    odd: bool, seats: int, expected: dict[str, int]
) -> None:
    uid = uid_with_parity(odd)
    assert names_descending(uid) is odd
    assert webster(seats, {"m1": 1, "m2": 1, "m3": 1}, uid=uid) == expected


def test_an_empty_uid_breaks_ties_by_ascending_name() -> None:
    assert names_descending("") is False
    assert webster(1, {"b": 5, "a": 5}, uid="") == {"a": 1, "b": 0}


def test_ties_prefer_the_party_with_fewer_seats_before_names() -> None:
    # After "b" takes the first seat (2/1 > 1/1), a=1/1 and b=2/3: "a" wins on priority; with
    # equal priorities (a=1/1, b=3/3 after initial seats) the party with fewer seats wins.
    assert webster(1, {"a": 1, "b": 3}, initial={"b": 1}, uid=uid_with_parity(True)) == {
        "a": 1,
        "b": 1,
    }


def test_initial_seats_are_kept_and_count_towards_priority() -> None:
    assert webster(2, {"a": 1, "b": 1}, initial={"a": 2, "c": 4}) == {"a": 2, "b": 2, "c": 4}


def test_negative_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        webster(1, {"a": -1})


def _one_seat_at_a_time(
    seats: int, weights: dict[str, int], uid: str, initial: dict[str, int]
) -> dict[str, int]:
    # The definition: each seat goes to the largest votes/(2·seats+1), ties as webster breaks them.
    result = {name: initial.get(name, 0) for name in sorted(set(weights) | set(initial))}
    descending = names_descending(uid)
    for _ in range(seats):

        def rank(name: str) -> tuple[Fraction, int, str | Reversed]:
            quotient = Fraction(weights.get(name, 0), 2 * result[name] + 1)
            return (-quotient, result[name], Reversed(name) if descending else name)

        result[min(result, key=rank)] += 1
    return result


class Reversed(str):
    """A string that sorts in reverse."""

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)


@settings(max_examples=200, derandomize=True, database=None)
@given(
    seats=st.integers(0, 300),
    weights=st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 50), max_size=6),
    initial=st.dictionaries(st.sampled_from("abcdefg"), st.integers(0, 5), max_size=3),
    uid=st.sampled_from(["", uid_with_parity(True), uid_with_parity(False)]),
)
def test_webster_is_the_one_seat_at_a_time_division(
    seats: int, weights: dict[str, int], initial: dict[str, int], uid: str
) -> None:
    expected = _one_seat_at_a_time(seats, weights, uid, initial) if weights or initial else {}
    assert webster(seats, weights, uid=uid, initial=initial) == expected


def test_webster_divides_int32_max_replicas_at_once() -> None:
    # Found by tests/fuzz/test_fuzz_scheduler.py: a Deployment of 2147483647 replicas (a valid
    # int32) kept the scheduler busy for hours, one heap operation per replica.
    with within(2):
        shares = webster(2**31 - 1, {"a": 1, "b": 2, "c": 4})
    assert shares == {"a": 306783378, "b": 613566756, "c": 1227133513}
