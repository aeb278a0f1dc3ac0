"""The evaluation lenses a program over the engine uses, for type checkers (imported lazily at run time)."""

from .data import load_locomo as load_locomo
from .data import load_longmemeval as load_longmemeval
from .metrics import evidence_recall as evidence_recall
from .metrics import mean_interval as mean_interval
from .metrics import paired_bootstrap as paired_bootstrap
from .metrics import strict_recall as strict_recall
from .metrics import ted as ted
from .runner import NCE_TED as NCE_TED
from .systems import CountingLLM as CountingLLM
from .systems import HybridRAGSystem as HybridRAGSystem
from .systems import NaiveRAGSystem as NaiveRAGSystem
from .systems import context_paths as context_paths

__all__: list[str]
