"""CoreFact verification (§3.3; docs/method.md: a verification the model is measured to do well): does what
the subject wrote in the cited messages state every detail of the candidate's statement? Yes/no,
scored as P(yes).

Only the subject's own messages are shown when the subject is a speaker (another speaker's praise or
guess is not what the subject said; the grounding gate already requires one such message); for
anyone else (a speaker's son, a pet) every cited message. On 160 labelled stored facts of dev
conv-26 and conv-30 this wording separated supported from unsupported ones best of three (ROC AUC
0.84; the messages of both speakers with "true of the subject?" 0.80; "every detail, about the
subject and not someone else?" 0.80): ``benchmarks/quality/fact_verifier.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from memsif.prompts import Prompt, clip
from memsif.records import Message
from memsif.timeparse import annotate_relative_dates, day_text

NAME = "fact_verify"
VERSION = "fact_verify/1"
#: Characters of each cited message shown.
MESSAGE_CHARS = 400


def build(subject: str, statement: str, sources: Sequence[Message]) -> Prompt:
    """The subject's cited messages (all cited ones when none is theirs), dated with relative dates
    resolved, and the statement; the question asks whether they state every detail of it."""
    own = [m for m in sources if m.speaker == subject] or list(sources)
    writer = own[0].speaker if len({m.speaker for m in own}) == 1 else "They"
    def line(m: Message) -> str:
        text = clip(annotate_relative_dates(m.text, m.time)[0], MESSAGE_CHARS)
        return f"({day_text(m.time)}) {text}" if writer != "They" else f"{m.speaker} ({day_text(m.time)}): {text}"

    lines = "\n".join(line(m) for m in own)
    text = (f"{writer} wrote:\n{lines}\n\nClaim: {statement}\n\n"
            f"Does what {writer} wrote state every detail of the claim?")
    return Prompt(NAME, VERSION, text, input_ids=tuple(m.id for m in own))
