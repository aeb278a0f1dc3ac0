"""An answer to a "When …?" question given the period its own context resolves (no model).

The context writes each relative expression with the period it resolves to, as LoCoMo answers it
(``memsif.timeparse.annotate_relative_dates``): "I went hiking last week [the week before 25 August 2023]".
The small model often answers such a question with the bare day ("25 August 2023", the day header or the
anchor of the period) or with another line's date. Measured on the dev questions without a model
(``benchmarks/quality/best_fact.py``): of the answers that pass over the line holding the answer, one in
eight gave that line's date without its qualifier or a day header's date instead of the line's own.

Two rules, both over the context's lines (a fact or an excerpt, "- Speaker: text") ranked by the question's
lexical terms they share (``memsif.lexical.terms``, the speakers' names left out):

- **qualifier**: a line sharing the most terms writes the answer's own day with its qualifier ("the week
  before 25 August 2023", "the weekend of …", "a few days before …"): the answer becomes that period;
- **closest line**: the one line sharing the most terms (at least ``MIN_SHARED``, no other line as many)
  resolves exactly one period in brackets ("yesterday [7 May 2023]", "last year [2022]") and the answer does
  not give it: the answer becomes that period.

An answer that already says a period ("week", "before", "ago", …) or names no date is left as it is. The
answer then differs from what was streamed: the trace and the chat show the model's words and the rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memsif import lexical

#: The fewest question terms the one closest line must share before its period replaces the answer's date.
MIN_SHARED = 2

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAY = rf"\d{{1,2}} (?:{_MONTHS}) \d{{4}}"
#: The periods ``memsif.timeparse.relative_date`` writes around a day ("the week before 8 May 2023").
_QUALIFIED = (rf"(?:the week (?:before|after|of)|the weekend (?:before|after|of)|"
              rf"a few (?:day|week|month|year)s (?:before|after)) {_DAY}")
_QUALIFIED_RE = re.compile(rf"\b({_QUALIFIED})\b", re.IGNORECASE)
#: A resolved period as the context writes it after its expression, in square brackets (an excerpt) or
#: round ones (a stored fact's statement).
_RESOLVED = re.compile(rf"[\[(]({_QUALIFIED}|{_DAY}|(?:{_MONTHS}) \d{{4}}|(?:19|20)\d{{2}})[\])]")
#: A date an answer may give: "25 August 2023", "August 25, 2023", "August 2023", "2023".
_ANSWER_DATE = re.compile(rf"{_DAY}|(?:{_MONTHS}) \d{{1,2}}, \d{{4}}|(?:{_MONTHS}) \d{{4}}|\b(?:19|20)\d{{2}}\b")
#: Words of an answer that already gives a period rather than a day.
_PERIOD_WORDS = re.compile(r"\b(?:week|weekend|before|after|few|ago|since|until|between)\b", re.IGNORECASE)
_LINE = re.compile(r"^- ([^:\n]{1,40}): (.*)$")


@dataclass(frozen=True)
class WhenAnswer:
    """The period an answer is given instead of its date: ``answer`` (the new answer), ``rule`` ("qualifier"
    or "closest line"), ``line`` (the context line that resolves it) and ``shared`` (question terms it
    shares)."""

    answer: str
    rule: str
    line: str
    shared: int

    def explain(self, model_answer: str) -> str:
        """One sentence for the trace: what the model wrote and which line gave the period."""
        return (f"the model wrote \"{model_answer}\"; the context line closest to the question "
                f"({self.shared} of its terms) resolves it as \"{self.answer}\" ({self.rule} rule): {self.line}")


def resolved_period(question: str, answer: str, context: str) -> WhenAnswer | None:
    """The period that ``answer`` to ``question`` should give, from ``context``'s lines, or None to keep it.

    Args:
        question: the question; only "When …" questions are considered.
        answer: the model's answer (one line).
        context: the answer context (``memsif.answer.context.render_context``): lines "- Speaker: text".

    Returns:
        A :class:`WhenAnswer`, or None when the question does not ask when, the answer names no date or
        already says a period, or no line settles it.
    """
    dates = _ANSWER_DATE.findall(answer)
    if not re.match(r"\s*when\b", question, re.IGNORECASE) or not dates or _PERIOD_WORDS.search(answer):
        return None
    lines = [m for m in (_LINE.match(line) for line in context.splitlines()) if m]
    names = {t for m in lines for t in lexical.terms(m.group(1))}
    asked = set(lexical.terms(question)) - names
    ranked = sorted(((len(asked & set(lexical.terms(m.group(2)))), m.group(0)) for m in lines),
                    key=lambda pair: -pair[0])
    if not ranked or ranked[0][0] < 1:
        return None
    top = ranked[0][0]
    closest = [line for shared, line in ranked if shared == top]
    for line in closest:  # the answer's own day, written with its qualifier
        for match in _QUALIFIED_RE.finditer(line):
            if any(match.group(1).endswith(day) for day in dates):
                return WhenAnswer(_capitalised(match.group(1)), "qualifier", line, top)
    if top < MIN_SHARED or len(closest) != 1:
        return None
    periods = {m.group(1) for m in _RESOLVED.finditer(closest[0])}
    if len(periods) != 1:
        return None
    period = periods.pop()
    if re.search(rf"(?<!\d){re.escape(period)}\b", answer, re.IGNORECASE):
        return None
    return WhenAnswer(_capitalised(period), "closest line", closest[0], top)


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]
