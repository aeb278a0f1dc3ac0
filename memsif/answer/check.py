"""A model-free check of an answer against its context (docs/method.md: on a weak model the trace
must show when an answer says what the memory does not).

An answer *mentions* names (capitalised words that are not common sentence starters), numbers
(digits and number words, compared as numbers) and calendar words (months, weekdays). A mention
absent from the answer context is flagged: the model brought it from elsewhere, most often invented
it. A number followed by a unit of time ("3 months", "five years") that the time between two dates
of the context gives (rounded or whole units) is computed, not invented, and is not flagged. The
check only flags; it never changes the answer.

Before the answer, the model's check (``check_context``, docs/method.md: the small model answers
focused yes/no questions well): P(yes) that the answer context states what is asked, over the answer prompt's
own prefix; below the measured threshold (``answer_check_threshold``) the answer is "not stated" with
the closest lines the memory holds (``closest_lines``, ``refusal``) instead of a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations

from memsif import lexical
from memsif.answer.language import detect, function_words
from memsif.errors import LLMError
from memsif.facts.values import NUMBER_WORDS, values
from memsif.llm import LLM
from memsif.llm.profiles import ModelProfile, step_threshold
from memsif.prompts import answer_check
from memsif.timeparse import DATE_IN_TEXT, parse_time

#: An answer that says the memory does not hold the answer ("I don't know", "It is not mentioned", "No
#: information about …"): read as a refusal, not as an answer with support.
_DECLINED = re.compile(
    r"\b(?:i\s+(?:do\s*n[o']?t|don't|cannot|can't)\s+(?:know|tell|say|find)|not\s+(?:mentioned|stated|specified)\b|"
    r"(?:does|do|did)\s*n[o']?t\s+(?:say|mention|state|"
    r"specify|tell)|no\s+(?:information|mention|record|details?)\b|(?:cannot|can't)\s+be\s+determined|unknown\b)",
    re.IGNORECASE)

#: Days in each unit of time an answer may compute from two dates of its context.
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 30.44, "year": 365.25}
#: Context dates read for computed spans (a long context holds many; pairs grow with the square).
_MAX_DATES = 40


def _dates(context: str) -> list[datetime]:
    """The distinct dates written in ``context`` (day, month or year precision), at most ``_MAX_DATES``."""
    found: dict[datetime, None] = {}
    for match in DATE_IN_TEXT.finditer(context):
        try:
            found[parse_time(match.group(0))] = None
        except ValueError:
            continue
    for year in re.findall(r"\b(?:19|20)\d{2}\b", context):
        found.setdefault(datetime(int(year), 1, 1), None)
    return list(found)[:_MAX_DATES]


def computed_spans(context: str) -> dict[str, set[int]]:
    """Per unit of time, the whole numbers of that unit between two dates of ``context`` (rounded and
    truncated): what an answer may compute ("from May to August: 3 months")."""
    spans: dict[str, set[int]] = {unit: set() for unit in _UNIT_DAYS}
    for a, b in combinations(_dates(context), 2):
        days = abs((b - a).days)
        for unit, length in _UNIT_DAYS.items():
            spans[unit] |= {round(days / length), int(days // length)}
        spans["year"].add(abs(a.year - b.year))
    return spans

#: Capitalised words that start answers without naming anything.
_STARTERS = {"yes", "no", "maybe", "the", "a", "an", "she", "he", "they", "it", "her", "his", "their", "i",
             "we", "you", "in", "on", "at", "by", "for", "from", "about", "around", "after", "before", "during",
             "last", "next", "this", "that", "these", "those", "there", "because", "since", "not", "unknown",
             "none", "both", "some", "one", "two", "three", "several", "many"}


def declined(answer: str) -> bool:
    """Whether ``answer`` says the memory does not hold the answer (``_DECLINED``), e.g. "I don't know",
    "Her age is not mentioned", "There is no information about that"."""
    return bool(_DECLINED.search(answer.replace("’", "'")))


def unsupported_mentions(answer: str, context: str) -> list[str]:
    """The names, numbers and dates of ``answer`` that ``context`` does not contain, in answer order
    (numbers compared as numbers: "two" matches "2"; words case-insensitively; a span of time the
    context's dates give is computed, :func:`computed_spans`). A capitalised function word of the answer's
    language ("Sí", "Die", "Les") is no mention. [] for an empty answer."""
    if not answer.strip():
        return []
    tokens = lexical.words(context)
    lang, _ = detect(answer)
    context_words = {w.lower for w in tokens} | (function_words(lang) if lang != "en" else frozenset())
    context_values = values(context, tokens)
    flagged: list[str] = []
    spans: dict[str, set[int]] | None = None
    words = lexical.words(answer)
    for k, word in enumerate(words):
        mention = None
        if word.like_num or word.lower in NUMBER_WORDS:
            number = values(word.text).numbers
            if number and not number <= context_values.numbers:
                mention = word.text
                unit = words[k + 1].lower.rstrip("s") if k + 1 < len(words) else ""
                if unit in _UNIT_DAYS:
                    spans = computed_spans(context) if spans is None else spans
                    if all(float(n).is_integer() and int(n) in spans[unit] for n in number):
                        mention = None
        elif word.is_alpha and word.text[:1].isupper() and word.lower not in _STARTERS:
            if word.lower not in context_words:
                mention = word.text
        if mention and mention not in flagged:
            flagged.append(mention)
    return flagged


def from_question(mentions: Sequence[str], question: str) -> tuple[list[str], list[str]]:
    """``mentions`` (``unsupported_mentions``) split into (the answer's own, those the ``question`` says
    too): a "Yes" that repeats the question's "Hollywood Bowl" invented nothing; it only leans on the
    question's premise, which the memory it was given does not confirm. Words compare case-insensitively,
    numbers as numbers."""
    said = {w.lower for w in lexical.words(question)}
    numbers = values(question).numbers
    own: list[str] = []
    premise: list[str] = []
    for mention in mentions:
        value = values(mention).numbers
        worded = all(word.lower() in said for word in mention.split())  # each word of "Hollywood Bowl"
        (premise if worded or (value and value <= numbers) else own).append(mention)
    return own, premise


#: Capitalised words a question starts or goes on with that name nothing (besides ``_STARTERS``).
_QUESTION_WORDS = {"what", "when", "where", "who", "whom", "whose", "which", "why", "how", "did", "does", "do", "is",
                   "are", "was", "were", "has", "have", "had", "can", "could", "would", "will", "should"}


#: Languages that capitalise every noun: there only acronyms ("LGBTQ") are taken for names.
NOUN_CAPITALISING = {"de", "lb"}


def asked_names(question: str, speakers: Sequence[str] = (), language: str = "en") -> list[str]:
    """The names a question asks about: capitalised words that are not its first word, a question
    word, a month or weekday, or a speaker ("When did Caroline fly to Tokyo?" → ["Tokyo"]), in order.
    In a language that capitalises every noun (``NOUN_CAPITALISING``) only acronyms count."""
    from memsif.facts.values import MONTHS, WEEKDAYS

    known = {p for sp in speakers for p in sp.lower().split()}
    found: list[str] = []
    words = [w for w in lexical.words(question) if w.is_alpha]
    for k, word in enumerate(words):
        text = word.text.strip("'’")
        low = text.lower()
        if language in NOUN_CAPITALISING and not (len(text) >= 2 and text.isupper()):
            continue
        if (k == 0 or not text[:1].isupper() or len(text) < 2 or low in _STARTERS
                or low in _QUESTION_WORDS or low in MONTHS or low in WEEKDAYS
                or any(len(low) >= 3 and name.startswith(low) for name in known)):
            continue
        if text not in found:
            found.append(text)
    return found


#: A question that asks for an inference ("Would Melanie likely enjoy Vivaldi?") may name what the
#: memory never mentions: the name and noun rules do not read it.
HYPOTHETICAL = re.compile(r"\b(?:would|might|likely|probably|could"  # and the same in es, pt, fr, de, it
                          r"|probablemente|podría|sería|provavelmente|poderia|seria|probablement|pourrait|serait"
                          r"|wahrscheinlich|würde|könnte|probabilmente|potrebbe|sarebbe)\b", re.IGNORECASE)


def found_in(text: str | lexical.StemSet, things: Sequence[str]) -> list[str]:
    """The words of ``things`` whose stem (or its first ``lexical.PREFIX_MATCH`` letters) occurs in ``text``
    (a text, or its stems when they are kept)."""
    found = text if isinstance(text, lexical.StemSet) else lexical.StemSet(text)
    return [t for t in things if any(w.stem in found for w in lexical.words(t))]


def mentions(text: str, name: str) -> bool:
    """Whether ``text`` holds ``name`` as a word (case-insensitive; "Tokyo's" holds "Tokyo")."""
    return re.search(rf"(?<!\w){re.escape(name.lower())}", text.lower()) is not None


# --- The model's check before the answer: does the memory state what is asked? ---

#: The P(yes) below which a model not measured for the check refuses, under ``answer_check="model"``.
UNMEASURED_ANSWER_CHECK_MIN_P = 0.5
#: What the memory holds that comes closest, shown with a refusal: this many lines.
CLOSEST_SHOWN = 3
#: The answer when the check finds the asked detail missing; the closest lines follow it.
NOT_STATED = "I don't know: this memory does not state that."


def answer_check_threshold(mode: str, llm: LLM | None, profile: ModelProfile) -> float | None:
    """The P(yes) below which the answer check of ``llm`` (measured as ``profile``) refuses under ``answer_check``
    ``mode`` ("auto": a model whose profile holds a measured threshold, ``ModelProfile.answer_check_min_p``; "model":
    any model, at ``UNMEASURED_ANSWER_CHECK_MIN_P`` when unmeasured; "off": none), or None when the check is not
    asked."""
    return None if llm is None else step_threshold(mode, llm.name or "", profile.answer_check_min_p,
                                                   UNMEASURED_ANSWER_CHECK_MIN_P)


@dataclass(frozen=True)
class AnswerCheck:
    """The model's check of one answer context: ``p_yes`` that it states what is asked (None when the
    model failed: ``error``), the threshold, whether the answer is refused, and the rule in words."""

    p_yes: float | None
    min_p: float
    refused: bool
    rule: str
    prompt_version: str
    error: str = ""


def check_context(llm: LLM, question: str, context: str, question_date: str | None, min_p: float) -> AnswerCheck:
    """Ask ``llm`` whether ``context`` states the answer to ``question`` (``memsif.prompts.answer_check``,
    the answer prompt's prefix, so a cached prefix is reused); refused when P(yes) < ``min_p``. A model
    error is recorded and the answer goes ahead (never raised)."""
    prompt = answer_check.build(question, context, question_date)
    try:
        [p] = llm.yes_probability([prompt])
    except LLMError as exc:
        return AnswerCheck(None, min_p, False, f"answer check failed ({type(exc).__name__}: {exc}): answered",
                           prompt.version, error=f"{type(exc).__name__}: {exc}")
    refused = p < min_p
    rule = (f"P(the memory states the answer) = {p:.2f} {'<' if refused else '≥'} {min_p:.2f}: "
            f"{'not answered; the closest lines shown' if refused else 'answered'}")
    return AnswerCheck(round(p, 4), min_p, refused, rule, prompt.version)


def closest_lines(facts: Sequence[tuple[str, float]], evidence: Sequence[tuple[str, float]],
                  k: int = CLOSEST_SHOWN) -> list[str]:
    """The ``k`` lines of an answer context closest to the question: its facts (text, cosine) by score,
    then its evidence (text, score) by score, each at most once."""
    ranked = [t for t, _ in sorted(facts, key=lambda x: -x[1])] + [t for t, _ in sorted(evidence, key=lambda x: -x[1])]
    return list(dict.fromkeys(ranked))[:k]


def refusal(closest: Sequence[str]) -> str:
    """The one-line answer of a refused check: ``NOT_STATED`` and the closest lines."""
    if not closest:
        return NOT_STATED
    return f"{NOT_STATED} Closest in memory: {' | '.join(' '.join(c.split()) for c in closest)}"
