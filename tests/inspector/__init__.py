"""Tests of ``memsif.inspector``."""
