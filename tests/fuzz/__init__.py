"""Fuzz tests feed Hypothesis-generated malformed input to every code path untrusted input reaches.

Each module targets one consumer (detector, scheduler, overriders, Lua, webhook replies, the
member registry) and asserts that every case is either accepted or refused with that consumer's
documented error or condition, within a deadline. Settings are fixed (``derandomize=True``, a
fixed ``max_examples`` per test) so a run in CI sees the same cases as a run on a laptop.
"""
