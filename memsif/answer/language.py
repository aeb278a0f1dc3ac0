"""The language a question is written in, and the languages an embedder is known to serve.

The relevance floor (``MemSIFConfig.relevance_floor``) is a cosine measured with an English embedder
on English questions: a question in another language scores low against English messages whatever it
asks, so the floor is applied only to questions in a language the embedder serves.

A question is a few words, too short for character n-gram detectors (``langdetect`` reads "Wann hat
Caroline das Adoptionsinterview bestanden?" as English). Function words decide instead: the language
whose stop-word list (spaCy's, ``spacy.lang.<code>.stop_words``) holds the most of the question's
words, English on a tie; a question in a script other than Latin is not English.
"""

from __future__ import annotations

import importlib
import re
import threading
import unicodedata
from functools import cache

#: Embedders (a substring of the model name) and the languages they were trained for; the packaged
#: all-MiniLM-L6-v2 and all-mpnet-base-v2 are English models (their model cards).
EMBEDDER_LANGUAGES: dict[str, tuple[str, ...]] = {"all-MiniLM-L6-v2": ("en",), "all-mpnet-base-v2": ("en",)}
#: Languages written in Latin script whose function words are compared (ISO 639-1, spaCy's codes).
LATIN_LANGUAGES = ("en", "es", "de", "fr", "pt", "it", "nl", "sv", "da", "nb", "pl", "ro", "ca", "cs", "tr", "id",
                   "fi", "hu")

_LOCK = threading.Lock()


@cache
def _stop_words() -> dict[str, frozenset[str]]:
    with _LOCK:
        return {code: frozenset(importlib.import_module(f"spacy.lang.{code}.stop_words").STOP_WORDS)
                for code in LATIN_LANGUAGES}


def function_words(language: str) -> frozenset[str]:
    """The function words (spaCy's stop words) of ``language`` (ISO 639-1), lowercase; empty for a language
    not in ``LATIN_LANGUAGES``."""
    return _stop_words().get(language, frozenset())


def detect(text: str) -> tuple[str, int]:
    """(ISO 639-1 code, how many of ``text``'s words are that language's function words). "und" (for
    undetermined) with 0 for a text in a script other than Latin; English for a text with no letters
    or no function word of any language."""
    letters = [ch for ch in text if ch.isalpha()]
    if letters and sum(unicodedata.name(ch, "").startswith("LATIN") for ch in letters) < len(letters) / 2:
        return "und", 0
    words = re.findall(r"[^\W\d_]+", text.lower())
    scores = {code: sum(1 for w in words if w in stops) for code, stops in _stop_words().items()}
    best = max(scores, key=lambda code: (scores[code], code == "en"))
    return best, scores[best]


def embedder_languages(model: str) -> tuple[str, ...] | None:
    """The languages ``model`` is known to serve, or None when it is not in ``EMBEDDER_LANGUAGES``."""
    return next((languages for key, languages in EMBEDDER_LANGUAGES.items() if key.lower() in model.lower()), None)
