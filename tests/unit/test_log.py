"""Logging: the library leaves configuration to applications; configure() masks credentials."""

from __future__ import annotations

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
