"""Benchmarks: one command each, printing what it measured in that run."""
