"""Tests of the scripts under ``benchmarks/``."""
