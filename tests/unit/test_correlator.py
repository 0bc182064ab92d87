"""EventCorrelator: client-go's aggregation, counting and spam filter, on a stepped clock."""

from __future__ import annotations

from typing import Any

from reconcile.record.correlator import (
    AGGREGATE_INTERVAL,
    AGGREGATE_MAX_EVENTS,
    AGGREGATE_PREFIX,
    SPAM_BURST,
    SPAM_QPS,
    Correlation,
    EventCorrelator,
    EventLog,
)


class _Clock:
    def __init__(self) -> None:
        self.time = 1000.0

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        self.time += seconds


def _subject(name: str = "a") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "namespace": "n", "uid": name}


def _record(correlator: EventCorrelator, message: str, *, name: str = "a") -> Correlation:
    """Correlate one event and, unless skipped, "write" it as the broadcaster would."""
    decision = correlator.correlate(_subject(name), "Warning", "Failed", message, "tester")
    if not decision.skip:
        existing = decision.existing
        log = EventLog(existing.name if existing else f"e{decision.message}", "n", decision.count)
        correlator.written(decision.key, log)
    return decision


def test_the_constants_are_client_gos() -> None:
    assert (AGGREGATE_MAX_EVENTS, AGGREGATE_INTERVAL) == (10, 600.0)
    assert (SPAM_BURST, SPAM_QPS) == (25, 1 / 300)
    assert AGGREGATE_PREFIX == "(combined from similar events): "


def test_a_repeated_event_is_counted_into_the_event_written_for_it() -> None:
    correlator = EventCorrelator(clock=_Clock())
    first = _record(correlator, "boom")
    assert (first.existing, first.count, first.message) == (None, 1, "boom")
    again = _record(correlator, "boom")
    assert again.existing is not None
    assert again.existing.name == "eboom"
    assert (again.count, again.message, again.key) == (2, "boom", first.key)


def test_ten_similar_events_within_ten_minutes_are_combined_into_one() -> None:
    clock = _Clock()
    correlator = EventCorrelator(clock=clock)
    decisions = []
    for index in range(12):
        decisions.append(_record(correlator, f"member{index} refused"))
        clock.time += 30  # well within the interval of each other
    # The first nine distinct messages are events of their own.
    assert [d.message for d in decisions[:9]] == [f"member{i} refused" for i in range(9)]
    assert all(d.existing is None for d in decisions[:9])
    # The tenth starts the combined Event; later ones count into it, with their message.
    combined = decisions[9:]
    assert [d.message for d in combined] == [
        AGGREGATE_PREFIX + f"member{i} refused" for i in range(9, 12)
    ]
    assert [d.count for d in combined] == [1, 2, 3]
    assert combined[0].existing is None
    assert all(d.existing is not None for d in combined[1:])
    assert len({d.key for d in combined}) == 1


def test_a_quiet_interval_starts_the_count_of_distinct_messages_afresh() -> None:
    clock = _Clock()
    correlator = EventCorrelator(clock=clock)
    for index in range(9):
        _record(correlator, f"m{index}")
    clock.time += AGGREGATE_INTERVAL + 1
    decision = _record(correlator, "m9")
    assert decision.message == "m9"  # not combined: the nine before are too old


def test_events_of_other_reasons_or_objects_are_not_similar() -> None:
    correlator = EventCorrelator(clock=_Clock())
    for index in range(9):
        _record(correlator, f"m{index}")
    other = correlator.correlate(_subject("b"), "Warning", "Failed", "m9", "tester")
    reason = correlator.correlate(_subject(), "Warning", "Other", "m9", "tester")
    assert (other.message, reason.message) == ("m9", "m9")


def test_a_component_may_burst_25_events_about_an_object_then_one_per_five_minutes() -> None:
    clock = _Clock()
    correlator = EventCorrelator(clock=clock)
    burst = [_record(correlator, "same") for _ in range(SPAM_BURST)]
    assert not any(d.skip for d in burst)
    assert _record(correlator, "same").skip
    assert not _record(correlator, "same", name="b").skip  # another object has its own bucket
    clock.time += 299
    assert _record(correlator, "same").skip
    clock.time += 1
    refilled = _record(correlator, "same")
    assert not refilled.skip
    # The two filtered occurrences still counted: 25 written, 2 filtered, this one.
    assert refilled.count == SPAM_BURST + 3
    assert _record(correlator, "same").skip


def test_caches_are_bounded_and_forget_the_least_recently_used() -> None:
    correlator = EventCorrelator(clock=_Clock(), remembered=2)
    for name in ("a", "b", "a", "c"):  # c pushes out b, the least recently used
        _record(correlator, "m", name=name)
    assert len(correlator) == 2
    assert _record(correlator, "m", name="a").existing is not None
    assert _record(correlator, "m", name="b").existing is None


def test_a_forgotten_event_is_created_again() -> None:
    correlator = EventCorrelator(clock=_Clock())
    first = _record(correlator, "m")
    correlator.forget(first.key)
    assert _record(correlator, "m").existing is None
