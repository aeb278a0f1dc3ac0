"""The answer check (§3.5, before the answer; docs/method.md: the small model answers focused yes/no
questions well): does the memory given to the answer state what the question asks? Yes/no, scored as P(yes).

The prompt is the answer prompt (``memsif.prompts.answer``: same system message, same memory, same
question) with the yes/no question where the answer prompt says "Answer:", so the model's key/value
cache of the shared prefix makes the check cost the few tokens after the question, and the answer
that follows reuses the same prefix.
"""

from __future__ import annotations

from memsif.prompts import Prompt, answer

NAME = "answer_check"
VERSION = "answer_check/1"
#: The question asked after the answer prompt's question, by wording version.
WORDINGS = {
    "answer_check/1": "Does the memory above state the answer to this question?",
    "answer_check/2": "Is the answer to this question written in the memory above?",
}


def build(question: str, context: str, question_date: str | None = None, version: str = VERSION) -> Prompt:
    """The answer prompt for ``question`` over ``context`` with ``WORDINGS[version]`` in place of
    "Answer:".

    Raises:
        KeyError: ``version`` is not one of ``WORDINGS``.
    """
    base = answer.build(question, context, question_date)
    stem = base.text.removesuffix("Answer:")
    return Prompt(NAME, version, f"{stem}{WORDINGS[version]}", system=answer.SYSTEM)
