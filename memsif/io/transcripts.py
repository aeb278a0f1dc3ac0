"""Transcript loaders: LoCoMo, LongMemEval, ChatGPT and Claude exports, OpenAI message lists, JSONL and
plain text, detected from the content (or forced with ``format``).

Every loader parses the whole input into typed records (:mod:`memsif.io.formats`) before returning,
so a malformed file raises a :class:`~memsif.errors.TranscriptError` naming the file, sample,
position, field, the type found and the type expected — and nothing is stored. Files are decoded
by :mod:`memsif.io.decode` (byte-order marks, UTF-16/32, detected legacy encodings, binary files
refused, invalid Unicode repaired) and parsed as data only (JSON or text; no pickle, no eval). Dates
come from the file, never from the clock; one that cannot be right (before 1990, after the load day)
is kept and warned about (:mod:`memsif.io.dates`). Only what a person or the assistant said is read:
system and developer prompts, tool calls and tool output are left out (:mod:`memsif.io.roles`).
Speaker names get one spelling per person (:mod:`memsif.io.speakers`). What the loader had to
repair, merge or leave out is listed in ``Transcript.warnings``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Container, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from itertools import count
from pathlib import Path
from typing import Any

from memsif.errors import TranscriptError
from memsif.io import formats as fm
from memsif.io.apps import APP_FORMATS, APP_LAYOUTS, AppChat, app_of, load_app, slack_channels
from memsif.io.chatlog import DateOrder, is_chat_log, load_chat_log
from memsif.io.dates import implausible_dates
from memsif.io.decode import decode, parse_json, repair
from memsif.io.exports import history_name, is_export_bundle, read_bundle, slack_files, zipped_chat
from memsif.io.names import name_of_file
from memsif.io.roles import (
    REASONING_PARTS,
    TOOL_CALL,
    left_out_as,
    left_out_warning,
    reasoning_in,
    reasoning_warning,
    tool_call_in,
    without_reasoning,
)
from memsif.io.speakers import normal_name, with_one_spelling
from memsif.records import PHOTO_CAPTION, Message
from memsif.timeparse import find_date, parse_time

#: Every format ``load_transcripts`` reads; "auto" detects one from the content.
FORMATS = ("locomo", "longmemeval", "chatgpt", "claude", "openai", *APP_FORMATS, "jsonl", "chatlog", "chatlog-dmy",
           "chatlog-mdy", "text")

_SPEAKER_LINE = re.compile(r"^([^\s:：#][^:：\n]{0,59}?)\s*[:：]\s?(.*)$")  # "：" full-width (CJK logs)
_HEADER = re.compile(r"^#{1,6}\s*(.*?)\s*$")


@dataclass
class Transcript:
    """One conversation ready to ingest; ``messages`` carry ``namespace = sample_id``.

    ``source_ids`` says whether the message ids come from the file (LoCoMo ``dia_id``, LongMemEval
    session ids, JSONL ``id``): then the same id with other content is a conflict. Otherwise the
    loader numbered the messages (plain text ``D1:1``, OpenAI ``M1``, JSONL ``J3``; ChatGPT and
    Claude ``<conversation key>:1``) and a later session that restarts the numbering is appended
    (:mod:`memsif.io.placement`).
    """

    sample_id: str
    messages: list[Message]
    format: str
    path: str
    extra: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    source_ids: bool = True

    @property
    def title(self) -> str:
        """The conversation's title (exports), else its sample id."""
        return str(self.extra.get("title") or self.sample_id)

    @property
    def first_time(self) -> datetime | None:
        return next((m.time for m in self.messages if m.time is not None), None)


#: Formats whose files are one person's history (an export of their conversations): "all
#: conversations" of such a file is one memory; a LoCoMo or LongMemEval file holds unrelated samples.
HISTORY_FORMATS = ("chatgpt", "claude")


def one_history(transcripts: Sequence[Transcript], name: str) -> Transcript:
    """Several conversations of one person (an export, or files over time) as one history: each
    conversation one session (its title kept in ``extra["sessions"]``), conversations in the order of
    their first dated message (undated ones after, in file order), messages renumbered 0…n-1.

    Raises:
        TranscriptError: message ids repeat across the conversations (each must be unique; loaders
            of exports key them by conversation).
    """
    if not transcripts:
        raise TranscriptError("no conversations to join", path=name)
    messages: list[Message] = []
    seen: dict[str, str] = {}
    sessions = []
    for t in sorted(transcripts, key=lambda t: (t.first_time is None, t.first_time or datetime.min)):  # stable
        for m in t.messages:
            if m.id in seen:
                raise TranscriptError(f"message id {m.id} is used by two conversations ({seen[m.id]} and "
                                      f"{t.sample_id}); load them into separate namespaces", path=t.path)
            seen[m.id] = t.sample_id
            messages.append(m.model_copy(update={"namespace": name, "index": len(messages)}))
        sessions.append({"sample_id": t.sample_id, "title": t.title, "messages": len(t.messages),
                         "first_time": t.first_time.isoformat() if t.first_time else None})
    messages, named = with_one_spelling(messages)  # one person across the conversations too
    shared = [w for w in transcripts[0].warnings if all(w in t.warnings for t in transcripts)]  # the file's
    return Transcript(name, messages, transcripts[0].format, transcripts[0].path,
                      {"sessions": sessions, "title": f"{len(transcripts)} conversations"},
                      shared + [f"{t.title}: {w}" for t in transcripts for w in t.warnings if w not in shared] + named,
                      all(t.source_ids for t in transcripts))


def load_transcripts(path: str | Path, sample: str | None = None, format: str = "auto",
                     include_do_not_remember: bool = False) -> list[Transcript]:
    """Read every sample of a transcript file (or only ``sample``). Conversations their person flagged
    so that they would not be remembered (a ChatGPT export's ``is_do_not_remember``, or
    ``do_not_remember`` on a conversation) are left out, with a warning, unless
    ``include_do_not_remember``.

    ``format="auto"`` detects it: JSON with ``conversation`` is LoCoMo, with ``haystack_sessions``
    LongMemEval, with ``mapping`` a ChatGPT export, with ``chat_messages`` a Claude export, a list of
    ``role``/``content`` objects (or ``{"messages": [...]}``) an OpenAI message list; one JSON object
    per line is JSONL; lines that start with a date and time are a chat log (``memsif.io.chatlog``);
    anything else is plain text (``Speaker: text`` lines at column 0, ``#`` headers that may hold a
    session date, indented lines continue a message). A ZIP, or a folder, is an export's
    ``conversations*.json`` documents read as one (``memsif.io.exports``). Every format leaves the
    model's reasoning out (``roles.without_reasoning``), and a message without a time of its own takes
    its conversation's where it can (the warnings say so).

    Raises:
        TranscriptError: unreadable or binary file, unknown layout (saying what was tried), a field of
            the wrong type, an unknown ``format`` or ``sample``.
    """
    p = Path(path)
    if format not in ("auto", *FORMATS):
        raise TranscriptError(f"unknown format {format!r}; use one of auto, {', '.join(FORMATS)}", path=str(p))
    found, warnings = _read_samples(p, sample, format, include_do_not_remember)
    found = _unique_samples(found)
    if sample is not None:
        found = [t for t in found if t.sample_id == sample]
        if not found:
            raise TranscriptError(f"no sample {sample!r} in this file", path=str(p))
    for t in found:
        _repair_messages(t)
        t.warnings += _without_reasoning(t)
        t.messages, named = with_one_spelling(t.messages)
        t.messages = _unique_ids(t.messages, t.warnings)
        t.warnings[:0] = warnings
        t.warnings += named + _undated(t) + implausible_dates(t.messages)
    if not any(t.messages for t in found):
        raise TranscriptError("the transcript holds no messages (no non-blank turns)", path=str(p), sample=sample)
    return found


def _read_samples(p: Path, sample: str | None, format: str,
                  include_do_not_remember: bool) -> tuple[list[Transcript], list[str]]:
    """The samples of the file, ZIP or folder ``p`` in ``format`` ("auto": detected) as its loader reads
    them, and the warnings of reading it (decoding, an export's parts).

    Raises:
        TranscriptError: as ``load_transcripts``.
    """
    parsed: Any = None
    bundle = is_export_bundle(p)
    chat = zipped_chat(p) if bundle and p.is_file() else None  # WhatsApp's ZIP: its chat log
    if bundle and chat is None and (slack := slack_files(p)) is not None:  # a Slack export: its channels' days
        channels = slack_channels(slack, lambda data, name: parse_json(decode(data, name)[0], name, name), str(p))
        return [as_transcript(c, "slack", str(p)) for c in channels], []
    if bundle and chat is None:  # a ZIP or a folder: an export's conversations documents, as one
        parsed, warnings = read_bundle(p)
        raw, fmt = "", format if format != "auto" else _detect_json(parsed, str(p))
    else:
        raw, warnings = _text_of(p) if chat is None else _text_of(p, *chat)
        fmt, parsed = (format, None) if format != "auto" else _detect(raw, chat[0] if chat else p.name, str(p))
    if fmt in _LOADERS:
        parsed = parse_json(raw, str(p)) if parsed is None else parsed
        return _LOADERS[fmt](parsed, str(p), sample, include_do_not_remember), warnings
    if fmt == "jsonl":
        return [_load_jsonl(raw, str(p))], warnings
    if fmt.startswith("chatlog"):
        return [_load_chat_log(raw, str(p), fmt)], warnings
    return [_load_text(raw, str(p))], warnings


def _text_of(p: Path, member: str | None = None, data: bytes = b"") -> tuple[str, list[str]]:
    """The text of the transcript file ``p`` (or of its ZIP's ``member``, ``data``) and its decoding's warnings.

    Raises:
        TranscriptError: unreadable, empty or binary.
    """
    path = f"{p}:{member}" if member else str(p)
    try:
        data = data if member else p.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"cannot read the file ({exc.strerror or exc})", path=path) from exc
    raw, warnings = decode(data, path)
    if not raw.strip():
        raise TranscriptError("the transcript holds no messages (the file is empty)", path=path)
    return raw, warnings


def as_memories(transcripts: Sequence[Transcript]) -> list[Transcript]:
    """What each memory of a loaded file holds: the conversations of an export (ChatGPT, Claude) are
    one person's history, joined by :func:`one_history` under the file's name; every sample of a
    LoCoMo or LongMemEval file, and a single transcript, is its own."""
    history = [t for t in transcripts if t.format in HISTORY_FORMATS]
    if not history:
        return list(transcripts)
    others = [t for t in transcripts if t.format not in HISTORY_FORMATS]
    name, said = name_of_file(history[0].path)
    joined = one_history(history, history_name(name))
    joined.warnings[:0] = said
    return [joined, *others]


# ------------------------------------------------------------------------------------ detection
def _detect(raw: str, name: str, path: str) -> tuple[str, Any]:
    """(format, parsed JSON or None) for ``format="auto"``."""
    if name.lower().endswith(".jsonl"):
        return "jsonl", None
    if is_chat_log(raw):  # before JSON: an iOS chat log's lines start with "["
        return "chatlog", None
    if raw.lstrip()[:1] in ("[", "{"):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            lines = [line for line in raw.splitlines() if line.strip()]
            if len(lines) > 1 and all(_is_json_object(line) for line in lines):
                return "jsonl", None
            raise TranscriptError(f"invalid JSON ({exc.msg})", path=path,
                                  position=f"line {exc.lineno}, column {exc.colno}") from exc
        return _detect_json(data, path), data
    return "text", None


def _is_json_object(line: str) -> bool:
    with suppress(json.JSONDecodeError):
        return isinstance(json.loads(line), dict)
    return False


def _detect_json(data: Any, path: str) -> str:
    items = [_require_dict(x, path, f"item {i}") for i, x in enumerate(_samples(data))]
    if not items:
        raise TranscriptError("the transcript holds no messages (an empty JSON list)", path=path)
    keys = set().union(*(d.keys() for d in items))
    for key, fmt in (("conversation", "locomo"), ("haystack_sessions", "longmemeval"), ("mapping", "chatgpt"),
                     ("chat_messages", "claude")):
        if key in keys:
            return fmt
    if (app := app_of(data)) is not None:
        return app
    messages = data.get("messages") if isinstance(data, dict) else None
    if (isinstance(messages, list) and all(isinstance(m, dict) and "role" in m for m in messages)) \
            or all("role" in d for d in items):
        return "openai"
    inner = messages[0] if isinstance(messages, list) and messages and isinstance(messages[0], dict) else {}
    shown = ", ".join(sorted(map(str, keys))[:12]) or "none"
    shown += f"; its messages' keys: {', '.join(sorted(map(str, inner))[:12])}" if inner else ""
    raise TranscriptError(
        "unknown JSON layout. Tried: LoCoMo (needs 'conversation'), LongMemEval (needs 'haystack_sessions'), "
        "ChatGPT export (needs 'mapping'), Claude export (needs 'chat_messages'), "
        f"{', '.join(APP_LAYOUTS)}, OpenAI messages (needs 'role' and 'content' in every message); the file's "
        f"keys: {shown}. Force one with --format.", path=path)


# -------------------------------------------------------------------------------------- helpers
def _msg(namespace: str, mid: str, speaker: str, text: str, time: datetime | None, session: str,
         index: int) -> Message:
    return Message(id=mid, namespace=namespace, speaker=speaker.strip(), text=text, time=time, session_id=session,
                   index=index)


def _time(value: Any, path: str, sample: str | None, position: str) -> datetime | None:
    """A transcript time: text, or epoch seconds (ChatGPT); None stays None (never the clock)."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(float(value), UTC).replace(tzinfo=None)
        return parse_time(str(value))
    except (ValueError, OverflowError, OSError) as exc:
        raise TranscriptError(f"unreadable date {value!r}", path=path, sample=sample, position=position) from exc


def _samples(data: Any) -> list[Any]:
    return data if isinstance(data, list) else [data]


def _require_dict(item: Any, path: str, position: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise TranscriptError(f"each sample must be a JSON object, found {fm.type_name(item)}", path=path,
                              position=position)
    return item


def _repair_messages(t: Transcript) -> None:
    """Lone surrogates replaced in every text a loader took from the file: the sample id (a namespace),
    and each message's text, speaker, id and session."""
    t.sample_id, repaired = repair(t.sample_id)
    for m in t.messages:
        for name in ("text", "speaker", "id", "session_id", "namespace"):
            value, n = repair(getattr(m, name))
            setattr(m, name, value)
            repaired += n
    if repaired:
        t.warnings.append(f"{repaired} character(s) were not valid Unicode (lone surrogates, e.g. half an emoji) "
                          "and were replaced by U+FFFD")


def _without_reasoning(t: Transcript) -> list[str]:
    """Every message's text without the model's reasoning blocks (``roles.without_reasoning``); a message
    that held only reasoning is left out. Returns the load's warning."""
    blocks = 0
    for m in t.messages:
        m.text, n = without_reasoning(m.text)
        blocks += n
    t.messages = [m for m in t.messages if m.text]  # numbered again by ``_unique_ids``
    return reasoning_warning(blocks)


def _undated(t: Transcript) -> list[str]:
    """A message without a time of its own in a conversation whose other messages are dated, or that has a
    date itself, takes the time of the message before it in its session, else the conversation's start
    (``extra["started"]``, exports: a conversation whose every message lacks its time takes it too); one with
    neither stays undated. Returns the load's warnings, which say so."""
    started: datetime | None = t.extra.get("started")
    if all(m.time is not None for m in t.messages) or (started is None and all(m.time is None for m in t.messages)):
        return []
    last: dict[str, datetime] = {}
    took: list[str] = []
    left: list[str] = []
    for m in t.messages:
        if m.time is not None:
            last[m.session_id] = m.time
            continue
        when = last.get(m.session_id) or started
        (took if when else left).append(m.id)
        m.time = when
    out = []
    if took:
        out.append(f"{len(took)} message{'s carry' if len(took) != 1 else ' carries'} no time of "
                   f"{'their' if len(took) != 1 else 'its'} own "
                   f"({', '.join(took[:3])}{' …' if len(took) > 3 else ''}): each takes its conversation's time, "
                   "the time of the message before it (or the conversation's start)")
    if left:
        out.append(f"{len(left)} message{'s carry' if len(left) != 1 else ' carries'} no date while the others do "
                   f"({', '.join(left[:3])}{' …' if len(left) > 3 else ''}): stored undated, so a relative date "
                   "in them ('yesterday') resolves against nothing; give each a time, or a '## date' header")
    return out


def _same(a: Message, b: Message) -> bool:
    return (a.speaker, a.text, a.time, a.session_id) == (b.speaker, b.text, b.time, b.session_id)


def _free(taken: Container[str], name: str) -> str:
    """``name#2``, ``name#3`` …: the first that is not ``taken`` (a repeated id with other content)."""
    return next(f"{name}#{k}" for k in count(2) if f"{name}#{k}" not in taken)


def _unique_ids(messages: list[Message], warnings: list[str]) -> list[Message]:
    """Message ids made unique inside one sample: a repeat with the same content is kept once, one with
    other content gets ``#2``, ``#3`` … — each with a warning."""
    kept: dict[str, Message] = {}
    for m in messages:
        if m.id in kept:
            if _same(kept[m.id], m):
                warnings.append(f"message {m.id} appears twice with the same content: stored once")
                continue
            new = _free(kept, m.id)
            warnings.append(f"message id {m.id} is used twice with different content: the second is {new}")
            m.id = new
        kept[m.id] = m
    for i, m in enumerate(kept.values()):
        m.index = i
    return list(kept.values())


def _unique_samples(found: list[Transcript]) -> list[Transcript]:
    """Sample ids made unique inside one file (the same rule as message ids)."""
    kept: dict[str, Transcript] = {}
    for t in found:
        if t.sample_id in kept:
            first = kept[t.sample_id]
            if len(first.messages) == len(t.messages) and all(map(_same, first.messages, t.messages)):
                first.warnings.append(f"sample {t.sample_id} appears twice with the same content: loaded once")
                continue
            new = _free(kept, t.sample_id)
            t.warnings.append(f"sample id {t.sample_id} is used twice with different content: the second is {new}")
            t.sample_id = new
            for m in t.messages:
                m.namespace = new
        kept[t.sample_id] = t
    return list(kept.values())


# -------------------------------------------------------------------------------------- LoCoMo
def _each_sample(data: Any, path: str, wanted: str | None, _include: bool, *, id_key: str,
                 load: Callable[[dict[str, Any], str, int, str], Transcript]) -> list[Transcript]:
    """Every sample object of a LoCoMo or LongMemEval file (or only ``wanted``), each read by ``load``."""
    out = []
    for i, item in enumerate(_samples(data)):
        item = _require_dict(item, path, f"item {i}")
        sid = str(item.get(id_key) or f"sample-{i}")
        if wanted is None or sid == wanted:
            out.append(load(item, path, i, sid))
    return out


def _load_locomo(item: dict[str, Any], path: str, i: int, sid: str) -> Transcript:
    conv = item.get("conversation")
    if not isinstance(conv, dict):
        raise TranscriptError(f"'conversation' is {fm.type_name(conv)}, expected an object of session_<n> lists",
                              path=path, sample=sid)
    numbers = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
    if not numbers and conv:
        keys = ", ".join(sorted(k for k in conv)[:10]) or "none"
        raise TranscriptError(f"LoCoMo 'conversation' has no 'session_<n>' lists (its keys: {keys}); sessions "
                              "are named session_1, session_2, … with dates in session_<n>_date_time",
                              path=path, sample=sid)
    messages: list[Message] = []
    left_out: Counter[str] = Counter()
    for n in numbers:
        turns = conv.get(f"session_{n}")
        if not turns:
            continue  # LoCoMo has sessions with a date and no turns
        if not isinstance(turns, list):
            raise TranscriptError(f"session_{n} is {fm.type_name(turns)}, expected a list of turns", path=path,
                                  sample=sid, position=f"session_{n}")
        when = _time(conv.get(f"session_{n}_date_time"), path, sid, f"session_{n}_date_time")
        for t, raw_turn in enumerate(turns):
            where = f"session_{n} turn {t}"
            if not isinstance(raw_turn, dict):
                raise TranscriptError(f"a turn is {fm.type_name(raw_turn)}, expected an object", path=path,
                                      sample=sid, position=where)
            if "text" not in raw_turn and "blip_caption" not in raw_turn:
                raise TranscriptError("field 'text' is missing", path=path, sample=sid, position=where)
            turn = fm.validate(fm.LoCoMoTurn, raw_turn, path=path, sample=sid, position=where)
            text = turn.text.strip()
            if turn.blip_caption:
                text = f"{text} {PHOTO_CAPTION}{turn.blip_caption}]".strip()
            if not text:
                continue
            if kind := left_out_as(turn.speaker):
                left_out[kind] += 1
                continue
            messages.append(_msg(sid, turn.dia_id or f"D{n}:{t + 1}", turn.speaker, text, when, f"session_{n}",
                                 len(messages)))
    speakers = [normal_name(x) if isinstance(x, str) else x for x in (conv.get("speaker_a"), conv.get("speaker_b"))]
    return Transcript(sid, messages, "locomo", path, {"qa": item.get("qa", []), "speakers": speakers},
                      left_out_warning(left_out))


# --------------------------------------------------------------------------------- LongMemEval
def _load_longmemeval(item: dict[str, Any], path: str, i: int, sid: str) -> Transcript:
    sample = fm.validate(fm.LongMemEvalSample, item, path=path, sample=sid, position=f"item {i}")
    sessions = sample.haystack_sessions
    ids = [str(x) for x in (sample.haystack_session_ids or [f"s{k}" for k in range(len(sessions))])]
    dates = sample.haystack_dates or [None] * len(sessions)
    if not len(ids) == len(sessions) == len(dates):
        raise TranscriptError(f"haystack_sessions ({len(sessions)}), haystack_session_ids ({len(ids)}) and "
                              f"haystack_dates ({len(dates)}) must have the same length", path=path, sample=sid)
    warnings: list[str] = []
    parsed = [_time(d, path, sid, f"haystack_dates[{k}]") for k, d in enumerate(dates)]
    # a repeated session id: the same turns are one session; other turns are another session
    seen: dict[str, int] = {}
    keep = []
    for k, session_id in enumerate(ids):
        if session_id in seen:
            first = seen[session_id]
            if sessions[first] == sessions[k] and parsed[first] == parsed[k]:
                warnings.append(f"session {session_id} appears twice with the same turns: stored once")
                continue
            ids[k] = _free(seen, session_id)
            warnings.append(f"session id {session_id} is used twice with different turns: the second is {ids[k]}")
        seen[ids[k]] = k
        keep.append(k)
    order = sorted(keep, key=lambda k: (parsed[k] is None, parsed[k] or datetime.min, k))
    messages: list[Message] = []
    answer_ids: list[str] = []
    left_out: Counter[str] = Counter()
    for k in order:
        for t, turn in enumerate(sessions[k]):
            text = turn.content.strip()
            if not text:
                continue
            if kind := left_out_as(turn.role):
                left_out[kind] += 1
                continue
            mid = f"{ids[k]}:{t + 1}"
            if turn.has_answer:
                answer_ids.append(mid)
            messages.append(_msg(sid, mid, turn.role, text, parsed[k], ids[k], len(messages)))
    extra = {
        "question": sample.question, "answer": sample.answer, "question_type": sample.question_type,
        "question_date": sample.question_date, "answer_session_ids": [str(x) for x in sample.answer_session_ids],
        "has_answer_ids": answer_ids,
    }
    return Transcript(sid, messages, "longmemeval", path, extra, warnings + left_out_warning(left_out))


# ----------------------------------------------------------------------------- ChatGPT export
def _conversation_keys(ids: Sequence[str]) -> list[str]:
    """Short, stable message-id prefixes for the conversations of an export: the first 8 letters or
    digits of each conversation id (a UUID's first block), longer where two would share one, ``c<n>``
    for an id without any."""
    cleaned = [re.sub(r"[^0-9A-Za-z]", "", x) for x in ids]
    for width in (8, 12, 16, 32, 64):
        keys = [c[:width] or f"c{i + 1}" for i, c in enumerate(cleaned)]
        if len(set(keys)) == len(keys):
            return keys
    return [f"{k}{i + 1}" for i, k in enumerate(keys)]


def _each_conversation(data: Any, path: str, wanted: str | None, include_do_not_remember: bool, *,
                       model: type[fm.ChatGPTConversation | fm.ClaudeConversation], id_of: Callable[[Any], str | None],
                       load: Callable[[Any, str, str, str], Transcript]) -> list[Transcript]:
    """Every conversation of a ChatGPT or Claude export (or only ``wanted``), validated as ``model`` and
    read by ``load`` with its id (``id_of``, else ``conversation-<n>``) and key (``_conversation_keys``);
    those flagged do-not-remember as ``_remembered`` says."""
    convs = []
    for i, item in enumerate(_samples(data)):
        item = _require_dict(item, path, f"conversation {i}")
        conv = fm.validate(model, item, path=path, position=f"conversation {i}")
        convs.append((str(id_of(conv) or f"conversation-{i + 1}"), conv))
    keys = _conversation_keys([sid for sid, _ in convs])
    found = [(load(conv, path, sid, key), conv.do_not_remember)
             for (sid, conv), key in zip(convs, keys, strict=True) if wanted is None or sid == wanted]
    return _remembered(found, path, include_do_not_remember)


def _remembered(found: list[tuple[Transcript, bool]], path: str, include: bool) -> list[Transcript]:
    """The conversations of an export its person did not flag do-not-remember (all with ``include``), each
    carrying the file's warning about those left out.

    Raises:
        TranscriptError: every conversation is flagged (and not ``include``).
    """
    flagged = [t for t, dnr in found if dnr]
    if include or not flagged:
        kept = [t for t, _ in found]
        said = [f"included {len(flagged)} conversation{'s' if len(flagged) != 1 else ''} marked do-not-remember, "
                "as asked"] if flagged else []
    else:
        kept = [t for t, dnr in found if not dnr]
        titles = ", ".join(f"“{t.title}”" for t in flagged[:3]) + (" …" if len(flagged) > 3 else "")
        said = [f"left out {len(flagged)} conversation{'s' if len(flagged) != 1 else ''} marked do-not-remember "
                f"({titles}): include {'them' if len(flagged) != 1 else 'it'} with --include-do-not-remember "
                "(Python: include_do_not_remember=True)"]
        if not kept:
            raise TranscriptError(f"every conversation of this file is marked do-not-remember ({titles}); include "
                                  "them deliberately with --include-do-not-remember (Python: "
                                  "include_do_not_remember=True)", path=path)
    for t in kept:
        t.warnings[:0] = said
    return kept


def _load_chatgpt(conv: fm.ChatGPTConversation, path: str, sid: str, key: str) -> Transcript:
    """The current branch of the tree: from ``current_node`` (or the newest leaf) up to the root."""
    nodes = conv.mapping
    leaf = conv.current_node if conv.current_node in nodes else None
    if leaf is None:
        leaves = [k for k, n in nodes.items() if not n.children]
        leaf = max(leaves, key=lambda k: (m.create_time if (m := nodes[k].message) else 0) or 0, default=None)
    branch, seen = [], set()
    while leaf is not None and leaf in nodes and leaf not in seen:
        seen.add(leaf)
        branch.append(nodes[leaf])
        leaf = nodes[leaf].parent
    left_out: Counter[str] = Counter()
    voice = Counter[str]()
    messages: list[Message] = []
    number = 0
    for node in reversed(branch):
        msg = node.message
        if msg is None or msg.content is None:
            continue
        if msg.content.content_type in _CHATGPT_REASONING:
            voice["reasoning"] += 1
            continue
        text, audio = _chatgpt_text(msg.content)
        if audio:
            voice["transcribed" if text else "untranscribed"] += 1
        if kind := (_chatgpt_left_out(msg) if text or audio else None):
            left_out[kind] += 1
            continue
        if text or audio:  # a recording without words keeps its number, so the ids after it never shift
            number += 1
        if not text:
            continue
        when = _time(msg.create_time, path, sid, f"message {number}") if msg.create_time else None
        messages.append(_msg(sid, f"{key}:{number}", msg.author.role, text, when, sid, len(messages)))
    started = _time(conv.create_time, path, sid, "create_time") if conv.create_time else None
    return Transcript(sid, messages, "chatgpt", path, {"title": conv.title, "started": started},
                      left_out_warning(left_out) + _voice_warning(voice) + reasoning_warning(voice["reasoning"]),
                      source_ids=False)


#: Content types of a ChatGPT export message that hold the model's reasoning (o-series models).
_CHATGPT_REASONING = frozenset({"thoughts", "reasoning_recap"})
#: Parts of a ChatGPT voice message that are its recorded audio or video (the words are an
#: ``audio_transcription`` part beside them).
_CHATGPT_AUDIO = frozenset({"audio_asset_pointer", "real_time_user_audio_video_asset_pointer",
                            "video_container_asset_pointer"})


def _chatgpt_text(content: fm.ChatGPTContent) -> tuple[str, int]:
    """A ChatGPT message's text (its text parts, a voice message's transcription, "[image]" for an image)
    and how many audio parts it held (recordings: not kept)."""
    texts, audio = [], 0
    for p in content.parts:
        if isinstance(p, str):
            texts.append(p)
        elif isinstance(p, dict) and p.get("content_type") in _CHATGPT_AUDIO:
            audio += 1
        elif isinstance(p, dict):
            texts.append(p.get("text") or "[image]")
    return "\n".join(t for t in texts if t).strip() or (content.text or "").strip(), audio


def _voice_warning(voice: Counter[str]) -> list[str]:
    """What a load kept and left out of voice messages."""
    n, m = voice["transcribed"], voice["untranscribed"]
    kept = [f"kept the transcription of {n} voice message{'s' if n != 1 else ''}; "
            f"{'their recordings are' if n != 1 else 'its recording is'} not kept"] if n else []
    return kept + ([f"left out {m} voice message{'s' if m != 1 else ''} without a transcription (only a recording, "
                    "which is not kept)"] if m else [])


def _chatgpt_left_out(msg: fm.ChatGPTMessage) -> str | None:
    """What a ChatGPT export message is when it is not the conversation: a system prompt, a tool's
    output (author "tool"), or a tool call — code for a tool, or a message to a tool (``recipient``
    other than "all")."""
    if kind := left_out_as(msg.author.role):
        return kind
    to_tool = msg.recipient not in (None, "all") or (msg.content is not None and msg.content.content_type == "code")
    return TOOL_CALL if to_tool else None


# ------------------------------------------------------------------------------- Claude export
def _load_claude(conv: fm.ClaudeConversation, path: str, sid: str, key: str) -> Transcript:
    """Each message's words (the text parts of ``content``, else ``text``) and, after them, the text
    of its attachments, each under an ``[attachment: <name>]`` line; a file without extracted text
    keeps only that line (and the load warns)."""
    messages: list[Message] = []
    left_out: Counter[str] = Counter()
    unread: list[str] = []
    thought = 0
    for k, m in enumerate(conv.chat_messages):
        parts = m.content or []
        thought += sum(1 for p in parts if p.type in REASONING_PARTS)
        said = "\n".join(p.text for p in parts if p.type == "text" and p.text).strip()
        kind = left_out_as(m.sender) or (None if said else tool_call_in({"content": [{"type": p.type} for p in parts]}))
        if kind:  # a tool call's ``text`` is a placeholder ("This block is not supported …"): never read
            left_out[kind] += 1
            continue
        text = "\n\n".join(x for x in (said or (m.text or "").strip(), *_claude_attachments(m, unread)) if x)
        if not text:
            continue
        when = _time(m.created_at, path, sid, f"chat_messages[{k}].created_at")
        messages.append(_msg(sid, f"{key}:{len(messages) + 1}", m.sender, text, when, sid, len(messages)))
    warnings = left_out_warning(left_out) + reasoning_warning(thought)
    if unread:
        warnings.append(f"{len(unread)} attachment{'s have' if len(unread) != 1 else ' has'} no extracted text "
                        f"({', '.join(unread[:5])}{' …' if len(unread) > 5 else ''}): only "
                        f"{'their names are' if len(unread) != 1 else 'its name is'} kept, as "
                        "[attachment: <name>] in the message")
    started = _time(conv.created_at, path, sid, "created_at")
    return Transcript(sid, messages, "claude", path, {"title": conv.name, "started": started}, warnings,
                      source_ids=False)


def _claude_attachments(m: fm.ClaudeMessage, unread: list[str]) -> list[str]:
    """The message's attachments as text blocks; the names of those without extracted text go to
    ``unread``. A file listed both as an attachment and among ``files`` is read once."""
    blocks = []
    named = {a.file_name for a in m.attachments}
    for a in [*m.attachments, *(f for f in m.files if f.file_name not in named)]:
        name = (a.file_name or "").strip() or "unnamed file"
        content = (a.extracted_content or "").strip()
        blocks.append(f"[attachment: {name}]" + (f"\n{content}" if content else ""))
        if not content:
            unread.append(name)
    return blocks


# ------------------------------------------------------------------------------ OpenAI messages
def _load_openai_all(data: Any, path: str, wanted: str | None, include_do_not_remember: bool) -> list[Transcript]:
    items = data["messages"] if isinstance(data, dict) and isinstance(data.get("messages"), list) else data
    sid, named = name_of_file(path)
    messages: list[Message] = []
    left_out: Counter[str] = Counter()
    thought = 0
    for k, item in enumerate(_samples(items)):
        thought += reasoning_in(item) if isinstance(item, dict) else 0
        msg = fm.validate(fm.OpenAIMessage, item, path=path, position=f"message {k}")
        text = (msg.content or "").strip()
        if kind := (left_out_as(msg.role) if text else tool_call_in(item)):  # a prompt, tool output or tool call
            left_out[kind] += 1
        elif text:
            messages.append(_msg(sid, f"M{k + 1}", msg.name or msg.role, text, None, "1", len(messages)))
    warnings = ["the messages carry no dates: they are stored undated", *left_out_warning(left_out),
                *reasoning_warning(thought)]
    flagged = isinstance(data, dict) and bool(data.get("do_not_remember") or data.get("is_do_not_remember"))
    t = Transcript(sid, messages, "openai", path, {"title": sid}, named + warnings, source_ids=False)
    return _remembered([(t, flagged)], path, include_do_not_remember)


def _load_app(data: Any, path: str, _wanted: str | None, _include: bool, *, fmt: str) -> list[Transcript]:
    """A messaging app's JSON export in layout ``fmt`` (``memsif.io.apps``): one sample per chat, named by it."""
    if app_of(data) != fmt and not (fmt == "slack" and isinstance(data, list)):
        layout = dict(zip(APP_FORMATS, APP_LAYOUTS, strict=True))[fmt]
        raise TranscriptError(f"the file is not {fmt}'s JSON layout ({layout})", path=path)
    return [as_transcript(chat, fmt, path) for chat in load_app(fmt, data, path)]


def as_transcript(chat: AppChat, fmt: str, path: str) -> Transcript:
    """A chat of an app's export as a ``Transcript`` (its name the sample id and title)."""
    return Transcript(chat.name, chat.messages, fmt, path, {"title": chat.name}, chat.warnings,
                      source_ids=chat.source_ids)


#: The loader of each JSON format: (data, path, wanted sample, include_do_not_remember) → its samples.
_LOADERS: dict[str, Callable[[Any, str, str | None, bool], list[Transcript]]] = {
    "locomo": partial(_each_sample, id_key="sample_id", load=_load_locomo),
    "longmemeval": partial(_each_sample, id_key="question_id", load=_load_longmemeval),
    "chatgpt": partial(_each_conversation, model=fm.ChatGPTConversation, id_of=lambda c: c.conversation_id or c.id,
                       load=_load_chatgpt),
    "claude": partial(_each_conversation, model=fm.ClaudeConversation, id_of=lambda c: c.uuid, load=_load_claude),
    "openai": _load_openai_all, **{fmt: partial(_load_app, fmt=fmt) for fmt in APP_FORMATS}}


# ---------------------------------------------------------------------------------- plain text
def _load_text(raw: str, path: str) -> Transcript:
    """``Speaker: text`` lines and ``#`` headers at column 0; every indented line, and every column-0
    line that is neither, continues the message before it. A header holding a date dates the
    session's messages; one without a date starts an undated session (with a warning). A ``System:``,
    ``Developer:``, ``Tool:`` or ``Function:`` message is left out with its continuation lines."""
    sid, named = name_of_file(path)
    messages: list[Message] = []
    warnings: list[str] = []
    left_out: Counter[str] = Counter()
    session, turn, when = 1, 0, None
    leaving_out = False
    for line_no, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        if header := _HEADER.match(line):  # neither a header nor a speaker starts with a blank
            when = find_date(header.group(1))
            if when is None:
                warnings.append(f"line {line_no}: header {header.group(1)!r} holds no date; its messages are "
                                "undated")
            if messages:
                session, turn = session + 1, 0
            leaving_out = False
            continue
        if match := _SPEAKER_LINE.match(line):
            text = match.group(2).strip()
            kind = left_out_as(match.group(1))
            leaving_out = kind is not None
            if kind:
                left_out[kind] += 1
                continue
            if not text:
                continue
            turn += 1
            messages.append(_msg(sid, f"D{session}:{turn}", match.group(1), text, when, f"session_{session}",
                                 len(messages)))
        elif leaving_out:
            continue  # a continuation of a message left out
        elif messages and messages[-1].session_id == f"session_{session}":
            messages[-1].text += "\n" + line.strip()  # continuation of a multi-line message
        else:
            raise TranscriptError("expected 'Speaker: text' at the start of a line (or a '## DATE' session header) "
                                  "before any other text", path=path, position=f"line {line_no}")
    return Transcript(sid, messages, "text", path, {}, named + warnings + left_out_warning(left_out),
                      source_ids=False)


def _load_chat_log(raw: str, path: str, fmt: str) -> Transcript:
    """A messaging app's chat log (``memsif.io.chatlog``); ``fmt`` "chatlog-dmy"/"chatlog-mdy" says how
    its dates read, "chatlog" lets the file's own dates tell."""
    sid, named = name_of_file(path)
    order: DateOrder | None = "dmy" if fmt == "chatlog-dmy" else "mdy" if fmt == "chatlog-mdy" else None
    messages, warnings = load_chat_log(raw, path, sid, order)
    return Transcript(sid, messages, "chatlog", path, {}, named + warnings, source_ids=False)


# --------------------------------------------------------------------------------------- JSONL
def _load_jsonl(raw: str, path: str) -> Transcript:
    sid, named = name_of_file(path)
    messages: list[Message] = []
    left_out: Counter[str] = Counter()
    numbered = False  # a line without an id: the loader numbers it
    thought = 0
    for line_no, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {line_no}"
        obj = parse_json(line, path, position=where)
        if not isinstance(obj, dict):
            raise TranscriptError(f'a line is {fm.type_name(obj)}, expected {{"speaker": ..., "text": ..., '
                                  '"time": ...}', path=path, position=where)
        rec = fm.validate(fm.JsonlLine, obj, path=path, position=where, build=fm.JsonlLine.from_obj)
        thought += reasoning_in(obj)
        text = rec.text.strip()
        if kind := (left_out_as(rec.role or rec.speaker) if text else tool_call_in(obj)):
            left_out[kind] += 1
            continue
        if not text:
            continue
        when = _time(rec.time, path, None, where)
        session = str(rec.session if rec.session is not None else (when.date().isoformat() if when else "1"))
        numbered = numbered or rec.id is None
        messages.append(_msg(sid, str(rec.id if rec.id is not None else f"J{line_no}"), rec.speaker, text, when,
                             session, len(messages)))
    return Transcript(sid, messages, "jsonl", path, warnings=named + left_out_warning(left_out) +
                      reasoning_warning(thought), source_ids=not numbered)
