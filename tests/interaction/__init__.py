"""Tests of ``memsif.interaction``."""
