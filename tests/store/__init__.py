"""Tests of ``memsif.store``."""
