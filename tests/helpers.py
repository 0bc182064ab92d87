"""Helpers shared by the test suites (``eventually`` lives in testenv, for users too)."""

from testenv import eventually

__all__ = ["eventually"]
