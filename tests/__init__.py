"""The tests, grouped as the package is: ``tests/<part>/`` tests ``memsif/<part>/``, ``tests/engine/`` the engine,
``tests/benchmarks/`` the scripts under ``benchmarks/``, and checks across the whole code sit here at the top.

A test finds the repository and its data through these names, never through its own depth in the tree.
"""

from pathlib import Path

#: The repository's root folder (README.md, app.py, assets/, benchmarks/, memsif/).
ROOT = Path(__file__).resolve().parent.parent
#: Fixture files the tests read (transcripts in every format, a recorded Mem0 run).
DATA = ROOT / "tests" / "data"
