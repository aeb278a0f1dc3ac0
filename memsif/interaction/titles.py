"""Titles of Topical Segments (§3.2): what a closed segment is about, as "Name: matter" lines.

With an LLM, one short generation (``prompts.segment_title``) over the segment's most specific
sentences; every line it writes is checked before it is kept (``check_lines``): the name must be a
speaker or a name the segment's text holds, the matter must share a content word with the segment,
say something beyond greetings and praise, and stay short. Without an LLM, or when the model wrote
no line that passes, the title is model-free (``rule_title``): the speaker whose words are rarest
in the namespace, then the segment's most specific content words (``key_term_title``); a segment of one
or two messages, too short for its terms to say what it is about ("Nate: guy, ton, lookl"), is titled by
a quote of its sentence that says most instead (``quote_title``), or has none. Either way the title
records what made it (``SegmentTitle.source``), with the prompt version and what was refused.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial

from memsif import lexical
from memsif.interaction import link
from memsif.interaction.state import InteractionState, SegmentState
from memsif.llm import LLM, Generation, generate_many
from memsif.locks import check_cancelled
from memsif.prompts import segment_title
from memsif.records import Message, SegmentTitle

#: Sentences of a segment the title prompt shows (the most specific ones, in order).
TITLE_SENTENCES = 6
#: Longest matter kept: the prompt asks for ``segment_title.MAX_WORDS``; a line a little over is kept
#: as written, a longer one is refused.
MAX_MATTER_WORDS = segment_title.MAX_WORDS + 2
#: Terms of a model-free title.
KEY_TERMS = 3
#: Segments of at most this many messages are titled by a quote, not by key terms.
QUOTE_UP_TO = 2
#: Words of a quote title (an ellipsis follows a longer sentence).
QUOTE_WORDS = 7
_SENTENCE = re.compile(r"[^.!?…\n]+[.!?…]*")

_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*\**\s*(?P<name>[^\W\d_][\w'’.\- ]{0,40}?)\s*\**\s*:"
                   r"\s*(?P<matter>.+?)\s*$")
#: A key entity a title may show: one or two words of letters (a hyphen or apostrophe inside).
_TERM = re.compile(r"[^\W\d_][\w'’-]*(?: [^\W\d_][\w'’-]*)?")
#: The prompt's own example, refused when copied.
_EXAMPLE = "starting a new job as a nurse"


def names_in(messages: Sequence[Message]) -> dict[str, str]:
    """Lower-case name → name as written, for every speaker of ``messages`` and every capitalised word
    that is not the first of a sentence (the people and places a segment mentions)."""
    out = {m.speaker.lower(): m.speaker for m in messages}
    for m in messages:
        for w in lexical.words(m.text):
            if w.is_alpha and w.text[:1].isupper() and not w.is_sent_start and not w.is_stop and len(w.text) > 1:
                out.setdefault(w.lower, w.text)
    return out


def check_lines(text: str, messages: Sequence[Message]) -> tuple[list[str], list[str]]:
    """The title lines of the model's ``text`` that pass, as "Name: matter", at most
    ``segment_title.MAX_LINES``; and each refused line with why ("line: reason").

    A line passes when its name is a speaker of ``messages`` (or the first name of one: "Mel" for
    Melanie is not, "Caroline" for "Caroline Smith" is) or a capitalised name their text holds, and its
    matter has at most ``MAX_MATTER_WORDS`` words, shares a content-word stem with ``messages`` and
    says more than greetings, thanks and praise (``lexical.EMPTY_STEMS``). Repeated lines are dropped.
    """
    names = names_in(messages)
    first_names = {sp.split()[0].lower(): sp for sp in {m.speaker for m in messages} if sp.split()}
    said = link.content_stems(m.text for m in messages)
    kept: list[str] = []
    refused: list[str] = []
    for raw in text.splitlines():
        line = raw.strip().strip('"')
        if not line:
            continue
        match = _LINE.match(line)
        if match is None:
            refused.append(f"{line}: not 'Name: matter'")
            continue
        name, matter = match["name"].strip(), match["matter"].strip().strip('"').rstrip(".;,")
        who = names.get(name.lower()) or first_names.get(name.lower())
        stems = link.content_stems([matter])
        words = matter.split()
        if who is None:
            refused.append(f"{line}: {name!r} is no speaker or name of this segment")
        elif len(words) > MAX_MATTER_WORDS:
            refused.append(f"{line}: {len(words)} words (at most {MAX_MATTER_WORDS})")
        elif matter.endswith("?"):
            refused.append(f"{line}: a question, not a matter")
        elif _EXAMPLE in matter.lower():
            refused.append(f"{line}: the prompt's example")
        elif not set(stems) - lexical.EMPTY_STEMS:
            refused.append(f"{line}: says nothing beyond greetings and praise")
        elif not set(stems) & set(said):
            refused.append(f"{line}: no word of it is in the segment")
        else:
            title = f"{who}: {matter}"
            if title.lower() not in {k.lower() for k in kept} and len(kept) < segment_title.MAX_LINES:
                kept.append(title)
    return kept, refused


def key_term_title(messages: Sequence[Message], entity_sets: Sequence[frozenset[str]],
                   idf: Callable[[str], float], speakers: Sequence[str] = (), n: int = KEY_TERMS) -> list[str]:
    """The model-free title: one line "Speaker: term, term, term" — the ``n`` most specific key entities
    of the segment (messages holding it × the IDF of its rarest stem; speakers' names, their short
    forms, words that state nothing and interjections left out, one form per stem), after the speaker
    who said them most. ``entity_sets`` are the messages' key-entity sets, in order; ``speakers`` the
    namespace's (a segment where one speaker talks may name the other). [] for a segment with no such
    entity."""
    names = name_parts((*speakers, *(m.speaker for m in messages)))
    held: Counter[str] = Counter(e for ents in entity_sets for e in ents if _TERM.fullmatch(e))
    stems = {e: {w.stem for w in lexical.words(e) if w.is_alpha} for e in held}
    scored = {e: held[e] * max(idf(s) for s in st) for e, st in stems.items()
              if st and meaningful(e, lexical.words(e), names)}
    terms = one_per_stem(sorted(scored, key=lambda e: (-scored[e], len(e), e)), stems, n)
    if not terms:
        return []
    said: Counter[str] = Counter(m.speaker for m, ents in zip(messages, entity_sets, strict=True)
                                 for e in terms if e in ents)
    who = max(said, key=lambda sp: (said[sp], sp))
    return [f"{who}: {', '.join(terms)}"]


def quote_title(messages: Sequence[Message], speakers: Sequence[str] = ()) -> list[str]:
    """The model-free title of a short segment: one line 'Speaker: "words as said…"', the sentence of
    ``messages`` with the most words that say something (``meaningful``: no name, stop word, word that
    states nothing or interjection; the earliest among equals), cut at ``QUOTE_WORDS`` words. [] when no
    sentence has such a word."""
    names = name_parts((*speakers, *(m.speaker for m in messages)))
    best: tuple[int, str, str] | None = None
    for m in messages:
        for match in _SENTENCE.finditer(m.text):
            sentence = match.group().strip()
            said = sum(1 for w in lexical.words(sentence) if w.is_alpha and meaningful(w.lower, [w], names))
            if said and (best is None or said > best[0]):
                best = (said, m.speaker, sentence)
    if best is None:
        return []
    _, who, sentence = best
    words = sentence.split()
    quoted = " ".join(words[:QUOTE_WORDS]).rstrip(",;:") + ("…" if len(words) > QUOTE_WORDS else "")
    return [f'{who}: "{quoted}"']


def rule_title(messages: Sequence[Message], entity_sets: Sequence[frozenset[str]],
               idf: Callable[[str], float], speakers: Sequence[str] = ()) -> tuple[list[str], str]:
    """The model-free title of a segment and its ``SegmentTitle.source``: a quote for a segment of at most
    ``QUOTE_UP_TO`` messages (``quote_title``), else its key terms (``key_term_title``)."""
    if len(messages) <= QUOTE_UP_TO:
        return quote_title(messages, speakers), "quote"
    return key_term_title(messages, entity_sets, idf, speakers), "key terms"


def name_parts(speakers: Iterable[str]) -> set[str]:
    """Every part of the speakers' names, lower-case ("Caroline Smith" → {"caroline", "smith"})."""
    return {part.lower() for sp in speakers for part in sp.split()}


def one_per_stem(ranked: Iterable[str], stems: Mapping[str, set[str]], n: int) -> list[str]:
    """The first ``n`` terms of ``ranked`` that share no stem (``stems[term]``) with a term taken before."""
    terms: list[str] = []
    seen: set[str] = set()
    for term in ranked:
        if not stems[term] & seen:
            seen |= stems[term]
            terms.append(term)
            if len(terms) == n:
                break
    return terms


def meaningful(term: str, words: Sequence[lexical.Word], names: set[str]) -> bool:
    """Whether a key entity says what something is about: three letters or more, no speaker's name or
    short form of one, not only stop words, words that state nothing or interjections."""
    return (len(term) >= 3 and bool(words) and not any(_names(w.lower, names) for w in words)
            and not all(w.is_stop or w.stem in lexical.EMPTY_STEMS or w.lower in lexical.EMPTY_STEMS
                        or _interjection(w.lower) for w in words))


def _names(word: str, names: set[str]) -> bool:
    return any(n == word or (len(word) >= 3 and n.startswith(word)) for n in names)


_LAUGHTER = re.compile(r"(?:ha|he|hi|ah){2,}h?|lo+l|lmf?ao|rofl")


def _interjection(word: str) -> bool:
    """"oof", "sooo", "hmm", "whoa", "btw", "haha": letters repeated, no vowel, laughter or a chat
    abbreviation."""
    return (any(c * 3 in word for c in set(word)) or not set(word) & set("aeiouy") or bool(_LAUGHTER.fullmatch(word))
            or word in _CHAT_WORDS)


#: Chat abbreviations and interjections that say nothing of what a segment is about.
_CHAT_WORDS = frozenset({"oof", "whoa", "btw", "lol", "omg", "wanna", "gonna", "gotta", "yay", "ugh", "aww", "woo",
                         "phew", "whew", "wow", "yeah", "yep", "okay", "ok"})


def title_subjects(lines: Sequence[str]) -> set[str]:
    """The names of a title's lines, lower-case ("Caroline: adoption" → {"caroline"})."""
    return {line.split(":", 1)[0].strip().lower() for line in lines if ":" in line}


class TitleWriter:
    """Writes each closed Topical Segment's title: the LLM's checked lines, else the model-free one."""

    def __init__(self, llm: LLM | None) -> None:
        self.llm = llm
        self.speakers: set[str] = set()  # the namespace's, as seen so far
        self.calls = 0

    def title(self, messages: Sequence[Message], entity_sets: Sequence[frozenset[str]],
              idf: Callable[[str], float]) -> SegmentTitle:
        """The title of a segment of ``messages`` (in order, with their key-entity sets), ``idf`` the
        namespace's so far (content-word stems).

        A failing LLM call is recorded in the title (``error``) and the model-free title is used.
        """
        return self.titles([(messages, entity_sets)], idf)[0]

    def titles(self, segments: Sequence[tuple[Sequence[Message], Sequence[frozenset[str]]]],
               idf: Callable[[str], float]) -> list[SegmentTitle]:
        """``title`` of several segments, their prompts generated together where the back-end decodes
        several at once (``memsif.llm.generate_many``); each title's ``seconds`` is its share of the call."""
        start = time.perf_counter()
        rules = []
        for messages, entity_sets in segments:
            self.speakers |= {m.speaker for m in messages}
            rules.append(rule_title(messages, entity_sets, idf, sorted(self.speakers)))
        if self.llm is None:
            return [SegmentTitle(lines=fallback, source=rule, message_count=len(messages),
                                 seconds=round((time.perf_counter() - start) / len(segments), 3))
                    for (messages, _), (fallback, rule) in zip(segments, rules, strict=True)]
        prompts = [segment_title.build(link.specific_sentences(messages, idf, TITLE_SENTENCES) or list(messages[:1]))
                   for messages, _ in segments]
        self.calls += len(prompts)
        replies = generate_many(self.llm, prompts, max_new_tokens=segment_title.MAX_NEW_TOKENS, temperature=0.0)
        seconds = round((time.perf_counter() - start) / len(segments), 3)
        out = []
        for (messages, _), (fallback, rule), prompt, reply in zip(segments, rules, prompts, replies, strict=True):
            lines, refused = check_lines(reply.text, messages) if isinstance(reply, Generation) else ([], [])
            error = None if isinstance(reply, Generation) else f"{type(reply).__name__}: {reply}"
            out.append(SegmentTitle(lines=lines or fallback, source="model" if lines else rule, model=self.llm.name,
                                    prompt_version=prompt.version, input_ids=list(prompt.input_ids), refused=refused,
                                    error=error, message_count=len(messages), seconds=seconds))
        return out


def trajectory_name(titles: Sequence[SegmentTitle | None]) -> str:
    """An Event Trajectory's name from its segments' titles (in time order): the title line whose
    matter's words recur most in the other segments' titles (the earliest among equals); "" when no
    segment has a title."""
    lines = [(k, line) for k, t in enumerate(titles) if t is not None for line in t.lines]
    if not lines:
        return ""
    stems = [(k, line, set(link.content_stems([line.split(":", 1)[-1]]))) for k, line in lines]

    def recurring(item: tuple[int, str, set[str]]) -> int:
        k, _, own = item
        return sum(1 for j, _, other in stems if j != k and own & other)

    return max(stems, key=lambda item: (recurring(item), -item[0]))[1]


def write_model_titles(state: InteractionState, llm: LLM, write: Callable[[SegmentState], None],
                       progress: Callable[[int, int, str], None] | None = None, wave: int = 8) -> int:
    """Title by ``llm`` every segment of ``state`` the model has not titled yet (the structure step
    gives model-free titles at close unless the trajectory decision reads titles), with the namespace's
    vocabulary, ``wave`` segments a call (``TitleWriter.titles``); ``write`` stores each segment as it is
    titled. Returns how many were titled.

    Raises:
        JobCancelled: the namespace's job was cancelled (what was written stays).
    """
    todo = [s for s in state.segments if s.record.title is None or s.record.title.model is None]
    if not todo:
        return 0
    vocabulary = link.Vocabulary()
    for seg in state.segments:
        texts: list[str] = [m.text for m in state.segment_messages(seg)]
        vocabulary.read(seg.record.id, len(texts), partial(list, texts))
    writer = TitleWriter(llm)
    if progress:  # the stage begins now (a countdown of the job's other work leaves it out)
        progress(0, len(todo), "titles")
    for first in range(0, len(todo), max(1, wave)):
        check_cancelled()
        group = todo[first:first + max(1, wave)]
        segments = [(messages, [state.entities[m.id] for m in messages])
                    for messages in (state.segment_messages(seg) for seg in group)]
        for seg, title in zip(group, writer.titles(segments, vocabulary.idf), strict=True):
            seg.record.title = title
            write(seg)
        if progress:
            progress(first + len(group), len(todo), "titles")
    return len(todo)
