"""A model-free check of an answer against its context (DESIGN: on a weak model the trace must show
when an answer says what the memory does not).

An answer *mentions* names (capitalised words that are not common sentence starters), numbers
(digits and number words, compared as numbers) and calendar words (months, weekdays). A mention
absent from the answer context is flagged: the model brought it from elsewhere, most often invented
it. The check only flags; it never changes the answer.
"""

from __future__ import annotations

from memsif import lexical
from memsif.facts.values import NUMBER_WORDS, values

#: Capitalised words that start answers without naming anything.
_STARTERS = {"yes", "no", "maybe", "the", "a", "an", "she", "he", "they", "it", "her", "his", "their", "i",
             "we", "you", "in", "on", "at", "by", "for", "from", "about", "around", "after", "before", "during",
             "last", "next", "this", "that", "these", "those", "there", "because", "since", "not", "unknown",
             "none", "both", "some", "one", "two", "three", "several", "many"}


def unsupported_mentions(answer: str, context: str) -> list[str]:
    """The names, numbers and dates of ``answer`` that ``context`` does not contain, in answer order
    (numbers compared as numbers: "two" matches "2"; words case-insensitively). [] for an empty answer."""
    if not answer.strip():
        return []
    tokens = lexical.words(context)
    context_words = {w.lower for w in tokens}
    context_values = values(context, tokens)
    flagged: list[str] = []
    for word in lexical.words(answer):
        mention = None
        if word.like_num or word.lower in NUMBER_WORDS:
            number = values(word.text).numbers
            if number and not number <= context_values.numbers:
                mention = word.text
        elif word.is_alpha and word.text[:1].isupper() and word.lower not in _STARTERS:
            if word.lower not in context_words:
                mention = word.text
        if mention and mention not in flagged:
            flagged.append(mention)
    return flagged

