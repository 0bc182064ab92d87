"""Runnable examples of controllers built on reconcile."""
