"""Tests of the engine (``memsif.engine``): corrections, export and import, concurrent sessions, an
interrupted ingest."""
