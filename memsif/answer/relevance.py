"""Is anything in a memory about a question? (§3.5; docs/method.md: on a weak model the engine says "I
don't know" rather than let it invent.) No model is involved.

The memory holds nothing about the question, and the answer says so without the model, when

1. nothing was retrieved;
2. the question names someone or something (a capitalised word that is not its first word, a speaker,
   a month or a weekday: "When did Caroline fly to **Tokyo**?") that no message of the memory mentions;
   a country or US state counts as mentioned where a message names one of its cities ("Canada" by
   "Toronto"; ``answer.places``), here and in rule 3, where a city or a country named also answers
   "cities" or "country" ("Which cities has Jon visited?": Paris);
3. the question is English and none of the things it asks about (its nouns and names less the
   question's frame: "What brand of **motorcycle** does Caroline ride?";
   ``EntityExtractor.asked_things``) occurs in any message (Snowball stems, five-letter prefixes);
4. the best cosine between the question and anything retrieved is below ``relevance_floor``, for a
   question in a language the embedder serves (``memsif.answer.language``; MiniLM: English). The floor was
   measured in English: a question in another language scores low against English messages whatever
   it asks, so there the floor is not applied, and the rule says so.

A question asking for an inference ("Would Melanie likely enjoy Vivaldi?") may name what the memory
never mentions: rules 2 and 3 do not read it. ``relevance_floor`` 0 turns rules 2–4 off. Measured on
labelled sets (the dev conversations' questions, never-discussed and other-language ones):
``benchmarks/quality/not_in_memory.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property

from memsif import lexical
from memsif.answer.check import HYPOTHETICAL, asked_names, found_in, mentions
from memsif.answer.language import detect, embedder_languages
from memsif.answer.places import place_named
from memsif.entities import EntityExtractor


class Said:
    """Every message text of a memory, as the rules read it: joined (a name is searched as written)
    and, built on first use, its stems (a thing is searched by stem)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.text = " ".join(texts)

    @cached_property
    def stems(self) -> lexical.StemSet:
        return lexical.StemSet(self.text)


def judge(question: str, relevance: float | None, floor: float, speakers: Sequence[str], said: Callable[[], Said],
          embedder: str, entities: EntityExtractor | None) -> tuple[bool, str, str]:
    """(nothing relevant?, the rule in words, the question's language) for ``question`` whose best cosine
    with what was retrieved is ``relevance`` (None: nothing retrieved). ``said`` gives every message text
    of the memory (called only when a rule needs it; the caller may keep it while the memory is
    unchanged); ``embedder`` names the embedding model."""
    lang, _ = detect(question)
    best = "nothing was retrieved" if relevance is None else f"best match {relevance:.2f}"
    if relevance is None:
        return True, f"nothing relevant: {best}; answered without the model", lang
    if floor == 0:
        return False, "relevance floor off", lang
    inference = HYPOTHETICAL.search(question) is not None
    names = [] if inference else asked_names(question, speakers, lang)
    things = entities.asked_things(question) if entities is not None and lang == "en" and not inference else None
    known = {part for sp in speakers for part in sp.lower().split()}  # a speaker is not what it asks about
    things = [t for t in things or [] if not any(len(t) >= 3 and k.startswith(t.lower()) for k in known)]
    memory = said() if names or things else Said([])
    if missing := [n for n in names if not mentions(memory.text, n) and not place_named(n, memory.text)]:
        why = f"the question names {', '.join(missing)}, which no message of this memory mentions"
        return True, f"nothing relevant: {why}; answered without the model", lang
    if things and not found_in(memory.stems, things) and not any(place_named(t, memory.text) for t in things):
        why = f"no message of this memory mentions what it asks about ({', '.join(things)})"
        return True, f"nothing relevant: {why}; answered without the model", lang
    served = embedder_languages(embedder)
    if served is not None and lang not in served:
        return False, (f"{best}; the question reads as {lang}, which {embedder} does not serve "
                       f"({', '.join(served)}): the relevance floor {floor:.2f}, measured in English, was not "
                       "applied"), lang
    if relevance < floor:
        why = f"{best}, below the relevance floor {floor:.2f}"
        return True, f"nothing relevant: {why}; answered without the model", lang
    return False, f"{best} ≥ relevance floor {floor:.2f}", lang
