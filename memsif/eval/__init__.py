"""Evaluation harness: the paper's protocol on LoCoMo and LongMemEval-S (§4.1, App. A, B, D, H),
baselines on the same backbone, token F1 and LLM-judge accuracy, evidence recall, cost,
diagnostics (TED, ASV, SNTD@k) and the paired bootstrap.

Entry points: ``python -m memsif eval locomo|longmemeval|compare`` and ``python -m memsif bench``.
"""
