"""Benchmarks: one script per figure the docs print (`python -m benchmarks.<name>`), never a timed test."""
