"""Logging: the library leaves configuration to applications; configure() masks credentials."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
import structlog


def test_importing_reconcile_does_not_configure_logging() -> None:
    probe = "import structlog, reconcile, testenv; print(structlog.is_configured())"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_configure_masks_credentials(capsys: pytest.CaptureFixture[str]) -> None:
    from reconcile import configure_logging

    configure_logging(json=True)
    try:
        structlog.get_logger("t").info("joined", token="s3cr3t", cluster="member1")
        line = capsys.readouterr().err
    finally:
        structlog.reset_defaults()
    assert "s3cr3t" not in line
    assert '"token": "***"' in line
    assert '"cluster": "member1"' in line


def test_logs_go_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stream replaced after configure() (pytest's capture ends, a daemon redirects it) must
    # not keep receiving lines: written to once closed, every log call would raise, and a
    # controller's "started" line raised before its workers were reported started.
    from reconcile import configure_logging

    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging(json=True)
    try:
        monkeypatch.setattr(sys, "stderr", second)
        first.close()
        structlog.get_logger("t").info("after the swap")
    finally:
        structlog.reset_defaults()
    assert "after the swap" in second.getvalue()


def test_console_tracebacks_are_plain_and_show_no_locals(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Whatever else is installed (rich arrives with dev tools): a traceback is Python's own,
    # without the values of locals, which may hold credentials and cost time to render.
    from reconcile import configure_logging

    configure_logging()
    try:
        password_of_the_frame = "s3cr3t"
        try:
            raise RuntimeError(f"boom {len(password_of_the_frame)}")
        except RuntimeError:
            structlog.get_logger("t").exception("reconcile failed")
        err = capsys.readouterr().err
    finally:
        structlog.reset_defaults()
    assert "Traceback (most recent call last):" in err
    assert "RuntimeError: boom 6" in err
    assert "s3cr3t" not in err
