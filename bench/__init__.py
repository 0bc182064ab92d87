"""Benchmarks, run as scripts: ``python bench/<name>.py``."""
