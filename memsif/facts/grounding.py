"""The grounding gate before every CoreFact write (§3.3; docs/method.md,
"Dual-Track Fact Memory": nothing the engine stores is trusted without a check that needs no model).

A candidate fact is written only when all of these hold; each is a check a reader can redo by hand:

- **format**: no JSON debris (``{ } [ ] "``) in subject or statement, not cut off at the length limit,
  no phrase repeated three times (a small model's loop);
- **subject**: a name, not a sentence (at most four words, no sentence punctuation, not a pronoun or a
  schema word) that is a speaker of the batch or a word sequence of the cited messages. A speaker's
  nickname in the messages ("Mel" for "Melanie") resolves to the speaker;
- **states something**: at least one content word besides the subject's name; not a question; not
  addressed to someone ("you"); not a bare date or greeting;
- **other speakers**: a speaker of the batch other than the subject whom the statement names is named
  in the supporting sentences ("Melanie and Caroline both looked great on their wedding day" from
  Caroline's "You both looked great on your wedding day" is rejected);
- **supported**: the cited messages say it. *Support* is the cited messages' sentences that are not
  questions, with their session date and resolved relative dates; for a speaker subject, only the
  sentences about that speaker (:func:`support_text`; another speaker's words are not the subject's).
  The share of the statement's content words (Snowball stems) found in the support is at least
  ``MIN_OVERLAP``; every number, month, weekday and capitalised name of the statement is in the
  support; and the statement's cosine with the closest supporting message is at least ``MIN_COSINE``
  (waived when ``FULL_OVERLAP`` of its content words are in the support).

:func:`check` returns every measure (shown in the CoreFact log) and the reasons a candidate failed.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memsif import lexical
from memsif.facts.values import MONTHS, WEEKDAYS, values
from memsif.matching import cosines
from memsif.records import Message, spoken_text
from memsif.timeparse import annotate_relative_dates, dated, day_text

#: Share of the statement's content words that must occur in the supporting sentences.
MIN_OVERLAP = 0.5
#: Cosine (statement, closest supporting message) below which a statement is not about its sources,
#: unless at least ``FULL_OVERLAP`` of its content words are there (words are the stronger witness).
MIN_COSINE = 0.25
FULL_OVERLAP = 0.8
MIN_CONTENT_WORDS = 1
MAX_SUBJECT_WORDS = 4
#: A word 3-gram seen this often means the model looped ("I am happy to say that I am happy to say…").
LOOP_REPEATS = 3

#: JSON left in a subject or statement by a model that wrote its reply wrong (brackets, quotes, a
#: backslash, a JSON null); CoreFact extraction drops such subjects and the gate refuses such candidates.
DEBRIS = re.compile(r'[{}\[\]"\\]|\b(?:null|none)\b\s*[,}]')
_SENTENCE_PUNCTUATION = re.compile(r"[.,;:!?…]")
_PRONOUNS = {"i", "me", "my", "mine", "we", "us", "our", "you", "your", "he", "him", "his", "she", "her",
             "they", "them", "their", "it", "its", "this", "that", "someone", "somebody", "everyone",
             "person", "people", "personne", "user", "speaker", "assistant", "unknown", "n/a", "none"}


@dataclass
class Grounding:
    """The gate's verdict on one candidate: ``passed``, the failed rules' reasons, every measure, and
    the subject as stored (a speaker's nickname resolved to the speaker's name)."""

    passed: bool
    reasons: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    subject: str = ""
    support_ids: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons) if self.reasons else "grounded in its sources"


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def _resolve_speaker(subject: str, speakers: Sequence[str]) -> str | None:
    """The speaker ``subject`` names: the same name, the first name, or a nickname (prefix ≥ 3 letters)."""
    key = _norm(subject)
    for speaker in speakers:
        name = _norm(speaker)
        if key == name or (name.split() and key == name.split()[0]):
            return speaker
    for speaker in speakers:
        name = _norm(speaker)
        if len(key) >= 3 and " " not in key and name.startswith(key):
            return speaker
    return None


def _names(speaker: str) -> list[str]:
    """The ways a speaker is written in messages: the name, first name, and 3–4-letter nicknames."""
    first = (_norm(speaker).split() or [""])[0]
    return list(dict.fromkeys([_norm(speaker), first, first[:3], first[:4]]))


def _mentions(text: str, speaker: str) -> bool:
    """Whether ``text`` names ``speaker``: the name or first name in any case, a shorter nickname only written
    as a name ("Mel"; the "car" of "a photo of a car dashboard" is not Caroline)."""
    low, first = _norm(text), (_norm(speaker).split() or [""])[0]
    return any(name and (re.search(rf"\b{re.escape(name)}\b", low) if len(name) >= len(first)
                         else re.search(rf"\b{re.escape(name.capitalize())}\b", text)) for name in _names(speaker))


def _content(words: Sequence[lexical.Word], drop: set[str]) -> list[str]:
    """Stems of content words: alphabetic, not stop words, not values, not in ``drop``."""
    return [w.stem for w in words
            if w.is_alpha and not w.is_stop and len(w.lower) > 1 and w.lower not in MONTHS
            and w.lower not in WEEKDAYS and w.stem not in drop and w.lower not in drop]


#: Words that make a statement about a shared photo, which a caption supports ("shared a photo of a sunset").
_PHOTO_WORDS = {"photo", "photos", "picture", "pictures", "pic", "pics", "image", "images", "snapshot", "selfie"}



def _loops(text: str) -> bool:
    tokens = _norm(text).split()
    grams = Counter(tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2))
    return bool(grams) and max(grams.values()) >= LOOP_REPEATS


def _about(sentence: str, writer_is_subject: bool, subject: str) -> bool:
    """Whether one sentence of a message speaks of ``subject`` (see :func:`support_text`)."""
    low = {w.lower for w in lexical.words(sentence)}
    addressed = bool(low & lexical.SECOND_PERSON)
    if writer_is_subject:
        return not addressed
    return (addressed or _mentions(sentence, subject)) and not low & lexical.FIRST_PERSON_SINGULAR


def support_text(message: Message, subject_speaker: str | None = None, captions: bool = True) -> str:
    """What a cited message supports: its sentences that are not questions, with the session date and
    the dates its relative expressions resolve to ("yesterday (7 May 2023)").

    With ``subject_speaker``, only the sentences about that speaker: their own sentences not addressed
    to someone else ("your painting is great" is about the listener), and other speakers' sentences
    that name them or address them ("you") without speaking of the writer ("I'm learning the piano"
    after "Wow, Melanie!" is about the writer). ``captions=False`` leaves out the photo caption a
    message carries (``records.PHOTO_CAPTION``): what the speaker said, not what a machine saw."""
    body = message.text if captions else spoken_text(message.text)
    sentences = [s for s in lexical.split_sentences(body) if not s.rstrip().endswith("?")]
    if subject_speaker is not None:
        own = message.speaker == subject_speaker
        sentences = [s for s in sentences if _about(s, own, subject_speaker)]
    if not sentences:
        return ""
    text = annotate_relative_dates(" ".join(sentences), message.time)[0]
    return dated(text, message.time)


def check(subject: str, statement: str, cited: Sequence[Message], speakers: Sequence[str],
          statement_vector: np.ndarray | None = None, cited_vectors: np.ndarray | None = None,
          max_statement_chars: int | None = None, example_words: frozenset[str] = frozenset()) -> Grounding:
    """Check one candidate against the messages it cites.

    Args:
        subject, statement: the candidate as extracted.
        cited: the messages the candidate names as its sources (at least one).
        speakers: the speakers of the extraction batch (names a subject may refer to).
        statement_vector: (d,) unit-normalised embedding of the statement; with ``cited_vectors``
            ((len(cited), d), unit-normalised) the cosine rule applies, otherwise it is skipped.
        max_statement_chars: the extraction schema's length limit (a statement that fills it was cut off).
        example_words: content stems of the extraction prompt's worked example (:func:`content_stems`);
            a statement using one that its cited messages do not hold copied the example.

    Returns:
        :class:`Grounding`; ``scores`` holds overlap (0–1), content_words, cosine (−1–1),
        unsupported_values and unsupported_names (counts).

    Raises:
        ValueError: ``cited`` is empty.
    """
    if not cited:
        raise ValueError("a candidate fact must cite at least one message")
    c = _Candidate.of(subject, statement, cited, speakers)
    measured = _Measures.of(c, statement_vector, cited_vectors, example_words)
    reasons = [*_format_rule(c, max_statement_chars), *_subject_rule(c), *_statement_rule(c),
               *_support_rule(c, measured, with_cosine=statement_vector is not None and cited_vectors is not None)]
    scores = {"overlap": round(measured.overlap, 4), "content_words": float(len(c.content)),
              "cosine": round(measured.cosine, 4), "unsupported_values": float(len(measured.unsupported_values)),
              "unsupported_names": float(len(measured.unsupported_names))}
    return Grounding(not reasons, reasons, scores, c.stored_subject, [m.id for m in measured.support_msgs])


@dataclass
class _Candidate:
    """One candidate as the rules read it: stripped, its subject resolved to a speaker where it names
    one, and the statement's words and content words (names of the speakers and the subject left out)."""

    subject: str
    statement: str
    cited: Sequence[Message]
    speakers: Sequence[str]
    speaker: str | None
    subject_key: str
    drop: set[str]
    words: list[lexical.Word]
    content: list[str]

    @property
    def stored_subject(self) -> str:
        return self.speaker or self.subject

    @classmethod
    def of(cls, subject: str, statement: str, cited: Sequence[Message], speakers: Sequence[str]) -> _Candidate:
        subject, statement = subject.strip(), statement.strip()
        subject_key = _norm(subject)
        drop = {s for sp in speakers for name in _names(sp) for s in (name, *name.split())} | set(subject_key.split())
        words = lexical.words(statement)
        return cls(subject, statement, cited, speakers, _resolve_speaker(subject, speakers), subject_key, drop, words,
                   list(dict.fromkeys(_content(words, drop))))


@dataclass
class _Measures:
    """How far the candidate's sources support it: the supporting messages (by or about the subject),
    the share of content words found there, values and names not found, the closest source's cosine,
    and other speakers it names whom the sources do not."""

    support_msgs: list[Message]
    overlap: float
    spoken_overlap: float
    own_messages: int
    unsupported_values: list[str]
    unsupported_names: list[str]
    cosine: float
    unnamed: list[str]
    copied: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, c: _Candidate, statement_vector: np.ndarray | None, cited_vectors: np.ndarray | None,
           example_words: frozenset[str] = frozenset()) -> _Measures:
        texts = {m.id: support_text(m, c.speaker) for m in c.cited}
        support_msgs = [m for m in c.cited if texts[m.id]]
        support = " ".join(texts[m.id] for m in support_msgs)
        support_words = lexical.words(support)
        overlap = _overlap(c.content, support)
        spoken_overlap = _overlap(c.content, " ".join(support_text(m, c.speaker, captions=False) for m in support_msgs))
        own_messages = sum(1 for m in c.cited if c.speaker is not None and m.speaker == c.speaker)
        stated, supported = values(c.statement, c.words), values(support, support_words)
        unsupported_values = sorted(
            [f"{v:g}" for v in stated.numbers - supported.numbers] + list(stated.calendar - supported.calendar))
        support_low = _norm(support)
        names = [w.text for w in c.words if w.is_alpha and w.text[:1].isupper() and not w.is_sent_start
                 and w.lower not in MONTHS and w.lower not in WEEKDAYS and w.lower not in c.drop
                 and w.lower not in _PRONOUNS]
        unsupported_names = sorted({n for n in names if not re.search(rf"\b{re.escape(n.lower())}\b", support_low)})
        cos = 0.0
        if statement_vector is not None and cited_vectors is not None and len(cited_vectors):
            own = [k for k, m in enumerate(c.cited) if m in support_msgs] or list(range(len(c.cited)))
            cos = float(np.max(cosines(cited_vectors[own], statement_vector)))
        others = [sp for sp in c.speakers if sp != c.stored_subject and _mentions(c.statement, sp)]  # "Car": a name
        cited_text = " ".join(f"{m.speaker} {m.text}" for m in c.cited)
        copied = [w for w in c.content if w in example_words and _overlap([w], cited_text) == 0]
        return cls(support_msgs, overlap, spoken_overlap, own_messages, unsupported_values, unsupported_names, cos,
                   [sp for sp in others if not _mentions(lexical.without_address(support, _names(sp)), sp)], copied)


def content_stems(text: str, keep: frozenset[str] = frozenset()) -> frozenset[str]:
    """The content-word stems of ``text`` (as the overlap rule counts them), less ``keep``."""
    return frozenset(_content(lexical.words(text), set(keep)))


def _overlap(content: Sequence[str], support: str) -> float:
    """Share of the ``content`` stems found in ``support`` (0 without content words)."""
    return lexical.StemSet(support).share(content)


def _scripts(text: str) -> set[str]:
    """The writing systems of ``text``'s letters ("LATIN", "CJK", "CYRILLIC", "HIRAGANA", …)."""
    return {(unicodedata.name(ch, "").split() or ["UNKNOWN"])[0] for ch in text if ch.isalpha()}


def _format_rule(c: _Candidate, max_statement_chars: int | None) -> list[str]:
    """The candidate is well-formed: no JSON debris, not cut off, no loop."""
    reasons = []
    if DEBRIS.search(c.subject) or DEBRIS.search(c.statement):
        reasons.append("format debris (JSON characters) in subject or statement")
    if max_statement_chars and len(c.statement) >= max_statement_chars - 1:
        reasons.append(f"statement cut off at the {max_statement_chars}-character limit")
    elif c.statement.endswith(("…", "...")):
        reasons.append("statement cut off (ends with an ellipsis)")
    elif not c.statement.endswith((".", "!")):
        reasons.append(f"statement cut off mid-phrase (ends {c.statement[-20:]!r}, not with a full stop)")
    if foreign := sorted(_scripts(c.statement) - set().union(*(_scripts(m.text) for m in c.cited))):
        reasons.append(f"written in a script its sources do not use ({', '.join(foreign)}): not the conversation's "
                       "language")
    if _loops(f"{c.subject} {c.statement}"):
        reasons.append("the model repeated itself")
    return reasons


def _subject_rule(c: _Candidate) -> list[str]:
    """The subject is a name: a speaker, or someone the cited messages name."""
    if len(c.subject.split()) > MAX_SUBJECT_WORDS or _SENTENCE_PUNCTUATION.search(c.subject):
        return [f"subject {c.subject!r} is a sentence, not a name"]
    if c.speaker is None and (not c.subject_key or c.subject_key in _PRONOUNS
                              or c.subject_key.split()[0] in {"i", "my", "we", "our"}):
        return [f"subject {c.subject!r} names nobody"]
    if c.speaker is None and not any(re.search(rf"\b{re.escape(c.subject_key)}\b", _norm(m.text)) for m in c.cited):
        return [f"subject {c.subject!r} is neither a speaker nor named in {', '.join(m.id for m in c.cited)}"]
    return []


#: The writer as the doer ("we went camping with my fam"): a third-person fact never holds them. "us", "our"
#: and "me" stay: "me-time", "within us all", "cherish our family" were in supported facts.
_WRITER_WORDS = frozenset({"i", "my", "we"})  # as tokens: "I'd" is "I" + "'d"


def _statement_rule(c: _Candidate) -> list[str]:
    """The statement states something: not a question, not addressed to someone, not a greeting."""
    reasons = []
    if c.statement.rstrip().endswith("?"):
        reasons.append("statement is a question")
    if {w.lower for w in c.words} & lexical.SECOND_PERSON:
        reasons.append("statement is addressed to someone (you/your), not a fact about the subject")
    if first := sorted({w.text for w in c.words if w.lower in _WRITER_WORDS}):
        reasons.append(f"statement is in the first person ({', '.join(first)}): a message copied, not a fact "
                       "about the subject")
    if len(c.content) < MIN_CONTENT_WORDS or all(w in lexical.GREETING_STEMS for w in c.content):
        what = "a bare date" if any(w.lower in MONTHS or w.like_num for w in c.words) else "nothing"
        reasons.append(f"statement states {what} ({len(c.content)} content word(s))")
    return reasons


def _support_rule(c: _Candidate, m: _Measures, with_cosine: bool) -> list[str]:
    """The sources support it: by or about the subject, its content words, values and names there,
    and (``with_cosine``) close enough in meaning unless nearly all its words are there."""
    reasons = []
    if m.unnamed:
        reasons.append(f"names {', '.join(m.unnamed)}, whom its supporting sentences do not name")
    if c.speaker is not None and not m.own_messages:
        reasons.append(f"none of {', '.join(x.id for x in c.cited)} is by {c.speaker}: another speaker's words "
                       "(praise, thanks, advice, a guess) are not a fact about them")
    elif c.speaker is not None and not m.support_msgs:
        reasons.append(f"none of {', '.join(x.id for x in c.cited)} is by or about {c.speaker}")
    elif c.content and m.overlap < MIN_OVERLAP:
        reasons.append(f"only {m.overlap:.0%} of its content words are in the supporting sentences")
    elif c.content and m.spoken_overlap < MIN_OVERLAP and not {w.lower for w in c.words} & _PHOTO_WORDS:
        reasons.append(f"only {m.spoken_overlap:.0%} of its content words are in what was said: the rest is a photo "
                       "caption, which supports only \"X shared a photo of …\"")
    if m.copied:
        reasons.append(f"copies the prompt's worked example ({', '.join(m.copied)}, not in its sources)")
    if m.unsupported_values:
        reasons.append(f"values not in its sources: {', '.join(m.unsupported_values)}")
    if m.unsupported_names:
        reasons.append(f"names not in its sources: {', '.join(m.unsupported_names)}")
    if with_cosine and m.cosine < MIN_COSINE and m.overlap < FULL_OVERLAP:
        reasons.append(f"cosine with its closest source {m.cosine:.2f} < {MIN_COSINE}")
    return reasons


#: A statement cut off at the length limit keeps its complete sentences when they hold this many characters.
MIN_WHOLE_SENTENCES_CHARS = 30
SENTENCE_END = re.compile(r"[.!?](?=\s)")


def whole_sentences(statement: str, max_chars: int) -> tuple[str, str]:
    """A statement that fills the extraction schema's ``max_chars`` (cut off by the grammar mid-word) cut back
    to its last complete sentence, when that keeps at least ``MIN_WHOLE_SENTENCES_CHARS`` characters:
    ("Caroline plays guitar and loves it. It helps her expre", "kept the complete sentences of a statement
    cut off at the 160-character limit"). Any other statement is returned as it is, with note ""."""
    if len(statement) < max_chars - 1:
        return statement, ""
    ends = [m.end() for m in SENTENCE_END.finditer(statement)]
    if not ends or ends[-1] < MIN_WHOLE_SENTENCES_CHARS:
        return statement, ""
    return (statement[:ends[-1]],
            f"kept the complete sentences of a statement cut off at the {max_chars}-character limit")


#: Messages a provenance repair may add to what the model cited.
MAX_REPAIRED_SOURCES = 2


def repair_sources(statement: str, batch: Sequence[Message], cited: Sequence[int], subject: str = "",
                   speakers: Sequence[str] = ()) -> tuple[list[int], list[int]]:
    """Model-free repair of a candidate's provenance. A small model often cites the wrong message of
    its batch: the neighbour of the one that says it, or the message that opens a topic ("my landlord
    raised the rent", 1) for a value that another message states ("it went up to 1,500 euros", 3).

    1. Every number of ``statement`` that none of the cited messages (with their session dates) holds
       is looked up in the other messages of ``batch``; those holding one are added, at most
       ``MAX_REPAIRED_SOURCES``.
    2. With ``subject``: when the (possibly extended) cited messages do not pass :func:`check` for the
       statement (without the cosine rule), but one other message of the batch does, that message
       replaces them (the one with the highest word overlap).

    The gate then checks the statement against the repaired sources as against any others, with
    every rule, so a repair can only ever cite messages that say the statement.

    Args:
        statement: the candidate's statement.
        batch: the extraction batch's messages, numbered 1..n as the model saw them.
        cited: the 1-based numbers the model cited (already range-checked).
        subject, speakers: the candidate's subject and the batch's speakers (for step 2).

    Returns:
        (the cited numbers after repair, in order; the numbers that are new among them).
    """
    def numbers(message: Message) -> frozenset[float]:
        return values(f"{day_text(message.time)} {message.text}").numbers

    held = set().union(*(numbers(batch[i - 1]) for i in cited)) if cited else set()
    missing = values(statement).numbers - held
    repaired = list(cited)
    if missing:
        added = [k for k in range(1, len(batch) + 1) if k not in cited and numbers(batch[k - 1]) & missing]
        repaired = sorted({*cited, *added[:MAX_REPAIRED_SOURCES]})
    if subject and not check(subject, statement, [batch[i - 1] for i in repaired], speakers).passed:
        verdicts = [(check(subject, statement, [batch[k - 1]], speakers), k) for k in range(1, len(batch) + 1)
                    if k not in repaired]
        passing = [(v.scores["overlap"], k) for v, k in verdicts if v.passed]
        if passing:
            repaired = [max(passing)[1]]
    return repaired, [k for k in repaired if k not in cited]
