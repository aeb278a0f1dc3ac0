"""Tests of ``memsif.io``."""
