"""Evaluation harness: the paper's protocol on LoCoMo and LongMemEval-S (§4.1, App. A, B, D, H),
baselines on the same backbone, token F1 and LLM-judge accuracy, evidence recall, cost,
diagnostics (TED, ASV, SNTD@k) and the paired bootstrap.

Entry points: ``python -m memsif eval locomo|longmemeval|compare`` and ``python -m memsif bench``.
The evaluation lenses a program over the engine uses (the inspector's Evaluate tab) are ``memsif.eval.__all__``.
"""

import lazy_loader

# every name of ``__init__.pyi``, imported from its module the first time it is read
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
