"""Tests of ``memsif.facts``."""
