"""The operator commands on the ``reconcile`` command line: help, flags, refusals before any I/O."""

from __future__ import annotations

import pytest

from controllers.cli import main


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        ("taint", ["--overwrite", "--dry-run"]),
        ("cordon", ["--dry-run"]),
        ("uncordon", ["--dry-run"]),
        (
            "register",
            [
                "--cluster-namespace",
                "--cluster-api-endpoint",
                "--cluster-provider",
                "--cluster-region",
                "--host-endpoint",
                "--output",
                "--refresh",
            ],
        ),
        ("unjoin", ["--cluster-kubeconfig", "--cluster-context", "--wait", "--dry-run"]),
        ("get", ["--namespace", "--all-namespaces", "--clusters"]),
    ],
)
def test_each_command_has_help_with_its_flags(
    command: str, flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: reconcile {command} ")
    for flag in ["--kubeconfig", "--context", *flags]:
        assert flag in text


def test_a_malformed_taint_is_refused_before_any_cluster_is_reached(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The kubeconfig does not exist: parsing must fail first, in one line.
    status = main(["taint", "m1", "a=b:Never", "--kubeconfig", "/nonexistent"])
    assert status == 1
    assert (
        capsys.readouterr().err == "taint: invalid taint effect: Never, unsupported taint effect\n"
    )


def test_an_unusable_kubeconfig_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["cordon", "m1", "--kubeconfig", "/nonexistent/kubeconfig"])
    assert status == 1
    err = capsys.readouterr().err
    assert err.startswith("cordon: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(("text", "seconds"), [("90", 90.0), ("1m30s", 90.0), ("500ms", 0.5)])
def test_unjoin_wait_takes_go_durations(text: str, seconds: float) -> None:
    from controllers.cli import _parser

    assert _parser().parse_args(["unjoin", "m1", "--wait", text]).wait == seconds


def test_a_bad_wait_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["unjoin", "m1", "--wait", "soon"])
    assert exited.value.code == 2
    assert "not a duration: 'soon'" in capsys.readouterr().err
