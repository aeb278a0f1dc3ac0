"""Tests of ``memsif.llm``."""
