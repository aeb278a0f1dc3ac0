"""Tests of ``memsif.answer``."""
