"""Suite-wide pytest configuration: pytester drives the testenv plugin in user-like projects."""

from __future__ import annotations

import pytest

from testenv import Binaries, find_binaries

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def binaries() -> Binaries:
    """The control-plane programs, located before any fixture (pytester) changes HOME."""
    return find_binaries()
