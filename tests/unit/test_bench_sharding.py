"""bench/sharding.py's record merging and overlap count, on synthetic records, and its arguments."""

from __future__ import annotations

import math

import pytest

from bench.sharding import Span, first_ends, merge_spans, overlaps, parse_args


def test_begin_and_end_lines_make_one_span_and_an_unended_one_lasts_until_the_kill() -> None:
    lines = [
        {"r": "r0", "k": "ns/a", "s": 1.0, "e": None},
        {"r": "r0", "k": "ns/a", "s": 1.0, "e": 2.0},
        {"r": "r1", "k": "ns/b", "s": 3.0, "e": None},
        {"r": "r2", "k": "ns/c", "s": 4.0, "e": None},
    ]
    spans = merge_spans(lines, cut={"r1": 5.0})
    assert spans == [
        Span(1.0, 2.0, "r0", "ns/a"),
        Span(3.0, 5.0, "r1", "ns/b"),
        Span(4.0, math.inf, "r2", "ns/c"),
    ]


def test_an_end_line_read_before_its_begin_line_still_ends_the_span() -> None:
    lines = [{"r": "r0", "k": "k", "s": 1.0, "e": 2.0}, {"r": "r0", "k": "k", "s": 1.0, "e": None}]
    assert merge_spans(lines, cut={}) == [Span(1.0, 2.0, "r0", "k")]


def test_overlaps_count_two_replicas_on_one_key_at_once_even_when_not_adjacent() -> None:
    spans = [
        Span(0.0, 10.0, "r0", "k"),  # long: overlaps r1's second span although r0's next is between
        Span(1.0, 2.0, "r0", "k"),
        Span(3.0, 4.0, "r1", "k"),
        Span(20.0, 21.0, "r1", "other"),
        Span(21.0, 22.0, "r0", "other"),  # touching, not overlapping
    ]
    assert overlaps(spans) == [("k", "r0", "r1")]


def test_one_replica_reconciling_a_key_twice_is_no_overlap() -> None:
    assert overlaps([Span(0.0, 2.0, "r0", "k"), Span(1.0, 3.0, "r0", "k")]) == []


def test_first_ends_takes_the_first_reconcile_after_a_time() -> None:
    spans = [Span(0.0, 1.0, "r0", "k"), Span(5.0, 6.0, "r0", "k"), Span(7.0, 8.0, "r0", "k")]
    assert first_ends(spans) == {("r0", "k"): 1.0}
    assert first_ends(spans, after=4.0) == {("r0", "k"): 6.0}


def test_arguments_default_to_the_issue_workload_and_refuse_a_kill_without_a_survivor() -> None:
    args = parse_args([])
    assert (args.objects, args.replicas, args.kill) == (10_000, [1, 2, 3], 3)
    assert parse_args(["--objects", "300", "--replicas", "2"]).replicas == [2]
    with pytest.raises(SystemExit):
        parse_args(["--replicas", "1", "--kill", "1"])
    with pytest.raises(SystemExit):
        parse_args(["--objects", "0"])
