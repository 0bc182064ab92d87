"""The cluster-status durations: Karmada's flags on ``reconcile controller-manager``, and checks."""

from __future__ import annotations

import argparse

import pytest

from controllers.cli import _parser
from controllers.cluster import ClusterStatusOptions
from controllers.duration import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0), ("2.5", 2.5), ("0", 0.0)],
)
def test_durations_read_like_go(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10x", "s", "10s junk", "-"])
def test_what_is_no_duration_says_so(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a duration"):
        parse_duration(text)


def test_defaults_are_karmadas() -> None:
    args = _parser().parse_args(["controller-manager"])
    assert ClusterStatusOptions.from_args(args) == ClusterStatusOptions(10.0, 30.0, 30.0)


def test_flags_set_the_options() -> None:
    args = _parser().parse_args(
        [
            "controller-manager",
            "--cluster-status-update-frequency=2s",
            "--cluster-failure-threshold=1m",
            "--cluster-success-threshold=500ms",
        ]
    )
    options = ClusterStatusOptions.from_args(args)
    assert (options.update_frequency, options.failure_threshold) == (2.0, 60.0)
    assert options.success_threshold == 0.5


def test_impossible_options_are_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        ClusterStatusOptions(update_frequency=0)
    with pytest.raises(ValueError, match="negative"):
        ClusterStatusOptions(failure_threshold=-1)
