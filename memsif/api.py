"""Deprecated: the engine's public names are ``memsif``'s (``memsif.__all__``). This module gives programs
written against it the same names, with a ``DeprecationWarning``; ``decision_threshold`` is now
``MemSIF.trajectory_threshold()``."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

import memsif

#: names this module offered beside today's surface, and where they live now
_MOVED = {"workload": "memsif.interaction.forecast", "trajectory_name": "memsif.interaction.titles",
          "trajectory_terms": "memsif.interaction.trajectories"}

__all__ = [name for name in memsif.__all__ if name != "__version__"] + list(_MOVED)


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'memsif.api' has no attribute {name!r}")
    said = f"it is the engine's inside now ({_MOVED[name]})" if name in _MOVED else f"import {name} from memsif"
    warnings.warn(f"memsif.api is deprecated: {said}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(_MOVED.get(name, "memsif")), name)
