"""The model's verification of a CoreFact candidate before it is stored (§3.3; docs/method.md,
"Dual-Track Fact Memory": a verification the model is measured to do well, yes/no against the cited sources).

A candidate that passed the grounding gate is verified when the model's P(yes) that what its subject
wrote in the cited messages states every detail of it (``memsif.prompts.fact_verify``) reaches the
model's measured threshold, and at least ``VERIFIED_MIN_OVERLAP`` of its content words are in its
supporting sentences. Thresholds are fitted on labelled stored facts of two dev conversations and
tested on the third (``benchmarks/quality/fact_verifier.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from memsif.errors import LLMError
from memsif.llm import LLM
from memsif.llm.profiles import ModelProfile, step_threshold
from memsif.prompts import fact_verify
from memsif.records import Message, Verification

#: The threshold of a model not measured, under ``fact_verification="model"``.
UNMEASURED_VERIFIER_MIN_P = 0.5
#: A verified fact also has at least this share of its content words in its supporting sentences (the
#: gate asks for ``grounding.MIN_OVERLAP``): with the P(yes) threshold, fitted on the same labels.
VERIFIED_MIN_OVERLAP = 0.7


def verifier_threshold(mode: str, llm: LLM | None, profile: ModelProfile) -> float | None:
    """The P(yes) at or above which ``llm`` (measured as ``profile``) verifies a candidate under ``fact_verification``
    ``mode`` ("auto": a model whose profile holds a measured threshold, ``ModelProfile.verify_min_p``, fitted on the
    labelled stored facts of dev conv-26 and conv-30: ``benchmarks/quality/fact_verifier.py``; "model": any model, at
    ``UNMEASURED_VERIFIER_MIN_P`` when unmeasured; "off": none), or None when it is not asked."""
    return None if llm is None else step_threshold(mode, llm.name or "", profile.verify_min_p,
                                                   UNMEASURED_VERIFIER_MIN_P)


def verify(llm: LLM | None, min_p: float | None, subject: str, statement: str, cited: Sequence[Message],
           overlap: float) -> Verification:
    """The check of one gated candidate: the model's P(yes) (``fact_verify``) against ``min_p`` and the
    gate's word ``overlap`` (0–1) against ``VERIFIED_MIN_OVERLAP``. Not verified, and the model not
    asked, when ``min_p`` is None (``verifier_threshold``) or nothing is cited; a model error is the
    rule ("not verified: the model failed …"), never raised."""
    words = (f"{overlap:.0%} of its words in its sources {'≥' if overlap >= VERIFIED_MIN_OVERLAP else '<'} "
             f"{VERIFIED_MIN_OVERLAP:.0%}")
    model = llm.name if llm is not None else None
    if llm is None or min_p is None or not cited:
        return Verification(verified=False, word_overlap=overlap, min_word_overlap=VERIFIED_MIN_OVERLAP,
                            rule=f"not verified: {model or 'the model'} is not measured to verify facts "
                                 f"(fact_verification; its model profile); {words}")
    prompt = fact_verify.build(subject, statement, cited)
    try:
        [p] = llm.yes_probability([prompt])
    except LLMError as exc:
        return Verification(verified=False, word_overlap=overlap, min_word_overlap=VERIFIED_MIN_OVERLAP, model=model,
                            prompt_version=prompt.version,
                            rule=f"not verified: the model failed ({type(exc).__name__}: {exc})")
    rule = (f"P(yes) {p:.2f} {'≥' if p >= min_p else '<'} {min_p:.2f} that {', '.join(prompt.input_ids)} "
            f"state it, {words}")
    return Verification(verified=p >= min_p and overlap >= VERIFIED_MIN_OVERLAP, rule=rule, p_yes=round(p, 4),
                        min_p=min_p, word_overlap=overlap, min_word_overlap=VERIFIED_MIN_OVERLAP, model=model,
                        prompt_version=prompt.version)
