"""The language a question is written in (``langdetect``, Google's language-detection profiles), and
the languages an embedder is known to serve.

The relevance floor (``MemSIFConfig.relevance_floor``) is a cosine measured with an English embedder
on English questions: a question in another language scores low against English messages whatever it
asks, so the floor is applied only to questions in a language the embedder serves.
"""

from __future__ import annotations

import threading

#: Embedders (a substring of the model name) and the languages they were trained for; the packaged
#: all-MiniLM-L6-v2 and all-mpnet-base-v2 are English models (their model cards).
EMBEDDER_LANGUAGES: dict[str, tuple[str, ...]] = {"all-MiniLM-L6-v2": ("en",), "all-mpnet-base-v2": ("en",)}
#: Below this probability of its best language a short question is taken to be English (langdetect
#: gives "What is Melanie's salary?" English 0.71, Afrikaans 0.29).
MIN_CONFIDENCE = 0.9

_LOCK = threading.Lock()  # langdetect's factory is global and seeded once


def detect(text: str) -> tuple[str, float]:
    """(ISO 639-1 code, probability) of ``text``'s language; ("en", 0.0) for text without letters and
    English when the detector is unsure (``MIN_CONFIDENCE``)."""
    from langdetect import DetectorFactory, detect_langs
    from langdetect.lang_detect_exception import LangDetectException

    with _LOCK:
        DetectorFactory.seed = 0
        try:
            found = detect_langs(text)
        except LangDetectException:
            return "en", 0.0
    best = found[0]
    if best.lang != "en" and best.prob < MIN_CONFIDENCE:
        return "en", 1.0 - best.prob
    return best.lang, float(best.prob)


def embedder_languages(model: str) -> tuple[str, ...] | None:
    """The languages ``model`` is known to serve, or None when it is not in ``EMBEDDER_LANGUAGES``."""
    for key, languages in EMBEDDER_LANGUAGES.items():
        if key.lower() in model.lower():
            return languages
    return None
