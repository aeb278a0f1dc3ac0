"""Sentences and sparse lexical vectors for hybrid retrieval (query-local evidence, §3.4–3.5).

Each message is split into whole sentences (spaCy's rule-based ``sentencizer``; a sentence of fewer
than ``MIN_SENTENCE_WORDS`` words is joined to its neighbour, so "Wow!" is never a unit of its own).
Each sentence gets a dense vector (the configured embedder) and a sparse lexical vector made here:
spaCy's tokenizer, spaCy's English stop words out, Snowball stems (``snowballstemmer``), each stem
hashed to a 32-bit index (CRC-32, stable across processes) with the BM25 term-frequency weight

    w(t, d) = tf · (k1 + 1) / (tf + k1 · (1 − b + b · |d| / AVG_TERMS))

as value. Qdrant multiplies by the inverse document frequency itself (sparse vectors with the IDF
modifier), so a query vector holds 1.0 per distinct stem and a dot product is BM25. The speaker's
name is one of a sentence's terms, which lets "What did Caroline ..." prefer Caroline's sentences.
"""

from __future__ import annotations

import re
import threading
import unicodedata
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from memsif.records import spoken_text

#: The version of the lexical encoding (terms, stems, weights): a stored sparse vector made by another
#: version is encoded again on import (2: scripts without spaces indexed by characters and bigrams).
VERSION = 2
#: BM25 parameters (Robertson & Zaragoza's usual values) and the typical number of terms of a sentence.
K1 = 1.2
B = 0.75
AVG_TERMS = 8.0
#: Sentences shorter than this many words are joined to a neighbour of the same message.
MIN_SENTENCE_WORDS = 4
#: At most this many sentences of one message are indexed (a pasted log is stored whole but not
#: indexed sentence by sentence past this point; its message vector still finds it).
MAX_SENTENCES_PER_MESSAGE = 64


#: Shared vocabulary of the fact rules (lower-case words; ``GREETING_STEMS`` are Snowball stems):
#: the writer speaking of themself, of a group they belong to, and to the listener; and the words of
#: greetings, thanks and sign-offs, which state nothing about anyone.
FIRST_PERSON_SINGULAR = frozenset({"i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"})
FIRST_PERSON = FIRST_PERSON_SINGULAR | {"we", "us", "our", "ours"}
SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "yourselves", "ya", "u"})
GREETING_STEMS = frozenset({
    "hi", "hey", "hello", "bye", "goodby", "thank", "thanks", "wow", "congrat", "congratul", "welcom", "sorri", "ok",
    "okay", "yeah", "yes", "yep", "cool", "awesom", "great", "nice", "glad", "good", "morn", "night", "talk", "soon",
    "later", "chat", "catch",
})
#: Words that carry no fact of their own: greetings, thanks, praise, cheering and vague feeling (Snowball
#: stems and lower-case words). A sentence whose content words are all among them states nothing to
#: remember ("It really inspired me.", "That's so awesome!", "Keep it up!").
EMPTY_STEMS = GREETING_STEMS | frozenset({
    "amaz", "best", "better", "beauti",
    "wonder", "fantast", "incred", "inspir", "proud", "happi", "glad", "excit", "realli", "super", "total", "truli",
    "alway", "definit", "absolut", "sure", "luck", "keep", "sound", "look", "feel", "seem", "stuff", "thing", "lot",
    "fun", "hope", "brave", "strong", "power", "special", "mean", "world", "life", "day", "time", "talk", "soon",
    "later", "chat", "catch", "care", "take", "love", "like", "appreci", "support", "meaning", "big", "huge",
    "lucki", "bless", "grate", "stay", "go", "get", "got", "let", "know", "think", "guess", "wish", "want",
    "morn", "night", "tonight", "today", "real", "pretti", "kind", "sweet", "cute", "lovely", "perfect", "heart",
    "warm", "touch", "moment", "memori", "peac", "calm", "work", "way", "famili", "friend", "rock", "tri", "ador",
    "motiv", "journey", "joy", "strength", "empow", "cathart", "relax", "genuin", "authent", "resili", "realiz",
    "remind", "believ", "hard", "tough", "awe", "gorgeous", "rewarding", "reward", "chanc", "miss",
})

#: Words that open an address to the listener ("Hey Caroline,", "Thanks, Mel!", "Wow, Caroline!").
_ADDRESS_OPENERS = (r"hey|hi|hiya|hello|yo|thanks|thank you|thx|wow|whoa|oh|aw+|omg|yeah|yes|yep|congrats|"
                    r"congratulations|dear|sorry|bye|night|morning")


def without_address(text: str, names: Sequence[str]) -> str:
    """``text`` without each of ``names`` where it only addresses the listener: after a greeting or thanks
    ("Hey Caroline, that roadtrip …", "Thanks, Mel!"), before a comma opening a sentence ("Caroline, look!"),
    or set off at a clause's end (", Caroline!"). A name said as a participant stays ("Caroline and I went")."""
    for name in filter(None, names):
        n = re.escape(name)
        text = re.sub(rf"(?i)\b((?:{_ADDRESS_OPENERS})\s*,?\s+){n}\b", r"\1", text)
        text = re.sub(rf"(?i)(^|[.!?]\s+){n}\s*,", r"\1", text)
        text = re.sub(rf"(?i),\s*{n}\s*(?=[.!?,;]|$)", "", text)
    return text


@dataclass(frozen=True)
class SparseVector:
    """A sparse lexical vector: sorted unique 32-bit ``indices`` and their ``values``."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __bool__(self) -> bool:
        return bool(self.indices)

    def without(self, indices: set[int]) -> SparseVector:
        """This vector less the terms in ``indices``."""
        kept = [(i, v) for i, v in zip(self.indices, self.values, strict=True) if i not in indices]
        return SparseVector(tuple(i for i, _ in kept), tuple(v for _, v in kept))


@cache
def _nlp() -> Any:
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


@cache
def _stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


_LOCK = threading.Lock()  # spaCy's tokenizer and the Snowball stemmer keep per-object state


def split_sentences(text: str) -> list[str]:
    """Whole sentences of ``text`` in order; short ones joined to a neighbour; at most
    ``MAX_SENTENCES_PER_MESSAGE``. Joined with single spaces they give ``text`` with its whitespace
    squashed (so a turn whose sentences are all shown reads as the turn)."""
    flat = " ".join(text.split())
    if not flat:
        return []
    spoken = spoken_text(flat)  # a photo caption is a sentence of its own, whatever the sentencizer makes of "["
    caption = flat[len(spoken):].strip()
    raw: list[str] = []
    if spoken:
        with _LOCK:
            raw = [s.text.strip() for s in _nlp()(spoken).sents if s.text.strip()]
    raw += [caption] if caption else []
    out: list[str] = []
    for sentence in raw:
        if out and (len(sentence.split()) < MIN_SENTENCE_WORDS or len(out[-1].split()) < MIN_SENTENCE_WORDS):
            out[-1] = f"{out[-1]} {sentence}"
        else:
            out.append(sentence)
    return out[:MAX_SENTENCES_PER_MESSAGE]


#: Scripts written without spaces between words (Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer,
#: Myanmar): a run of them is indexed as its characters and character bigrams (the CJK analyzers'
#: usual scheme), since the tokenizer would keep a whole clause as one token.
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]+")
_SPACED_RUN = re.compile(r"[^\W_]+")


def _graphemes(text: str) -> list[str]:
    """Characters with their combining marks (Thai vowel and tone marks stay on their consonant)."""
    out: list[str] = []
    for ch in text:
        if out and unicodedata.category(ch) in ("Mn", "Mc"):
            out[-1] += ch
        else:
            out.append(ch)
    return out


def _unspaced_terms(token: str) -> list[str]:
    """Terms of a token holding unspaced script: each run's characters and bigrams; the letters and
    digits between runs as lower-case words, single letters kept ("C盘" → "c", "盘")."""
    out: list[str] = []
    last = 0
    for run in _UNSPACED.finditer(token):
        out += [w.lower() for w in _SPACED_RUN.findall(token[last:run.start()])]
        chars = _graphemes(run.group())
        out += chars + [chars[i] + chars[i + 1] for i in range(len(chars) - 1)]
        last = run.end()
    return out + [w.lower() for w in _SPACED_RUN.findall(token[last:])]


def terms(text: str) -> list[str]:
    """Lexical terms of ``text``: lower-cased Snowball stems of its words and numbers, stop words and
    punctuation left out; a run of unspaced script (Chinese, Japanese, Thai, …) gives its characters
    and character bigrams."""
    with _LOCK:
        out: list[str] = []
        for t in _nlp().make_doc(text):
            if _UNSPACED.search(t.text):
                out += _unspaced_terms(t.text)
            elif (t.is_alpha or t.like_num) and not t.is_stop and (len(t.lower_) > 1 or t.like_num):
                out.append(_stemmer().stemWord(t.lower_))
        return out


@dataclass(frozen=True)
class Word:
    """One token of a text as the tokenizer sees it: its text, lower case, Snowball stem and flags."""

    text: str
    lower: str
    stem: str
    like_num: bool
    is_stop: bool
    is_alpha: bool
    is_sent_start: bool


def words(text: str) -> list[Word]:
    """The tokens of ``text`` (spaCy's English tokenizer) with their stems; punctuation included."""
    with _LOCK:
        doc = _nlp().make_doc(text)
        stems = _stemmer().stemWords([t.lower_ for t in doc])
        return [Word(t.text, t.lower_, stem, bool(t.like_num), bool(t.is_stop), bool(t.is_alpha),
                     t.i == 0 or doc[t.i - 1].text in _SENTENCE_END)
                for t, stem in zip(doc, stems, strict=True)]


#: Two stems match when they share this many first letters and the shorter has at least as many
#: ("paint" / "painter", "creativ" / "creativity", "volunt" / "volunteer"): Snowball keeps agent nouns
#: apart from their verbs.
PREFIX_MATCH = 5


class StemSet:
    """The stems and lower-case words of a text, asked whether a stem occurs in it (exactly, or by
    its first ``PREFIX_MATCH`` letters)."""

    def __init__(self, text: str) -> None:
        found = words(text)
        self.stems = {w.stem for w in found} | {w.lower for w in found}
        self.prefixes = {s[:PREFIX_MATCH] for s in self.stems if len(s) >= PREFIX_MATCH}

    def __contains__(self, stem: object) -> bool:
        return isinstance(stem, str) and (stem in self.stems or (
            len(stem) >= PREFIX_MATCH and stem[:PREFIX_MATCH] in self.prefixes))

    def share(self, stems: Sequence[str]) -> float:
        """Share of ``stems`` found here (0 for none)."""
        return sum(1 for s in stems if s in self) / len(stems) if stems else 0.0

_SENTENCE_END = {".", "!", "?", ":", ";", "\"", "(", "[", "-", "—"}


def term_index(term: str) -> int:
    """The sparse index of a term: its CRC-32 (stable across processes and machines)."""
    return zlib.crc32(term.encode("utf-8"))


def _vector(weights: dict[int, float]) -> SparseVector:
    indices = tuple(sorted(weights))
    return SparseVector(indices, tuple(round(weights[i], 4) for i in indices))


def encode_document(text: str, speaker: str = "") -> SparseVector:
    """BM25 term weights of one sentence (plus its speaker's name); Qdrant applies the IDF."""
    counts = Counter(term_index(t) for t in terms(f"{speaker} {text}" if speaker else text))
    length = sum(counts.values())
    norm = K1 * (1 - B + B * length / AVG_TERMS)
    return _vector({i: tf * (K1 + 1) / (tf + norm) for i, tf in counts.items()})


def encode_documents(texts: Sequence[str], speakers: Sequence[str] | None = None) -> list[SparseVector]:
    speakers = speakers if speakers is not None else [""] * len(texts)
    return [encode_document(t, s) for t, s in zip(texts, speakers, strict=True)]


def encode_query(text: str) -> SparseVector:
    """1.0 for each distinct term of the question (a dot product with documents is then BM25)."""
    return _vector({term_index(t): 1.0 for t in terms(text)})
