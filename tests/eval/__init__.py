"""Tests of ``memsif.eval``."""
