"""Transcript loaders: LoCoMo (list layout), LongMemEval, plain text and JSONL.

Every loader parses the whole input before returning, so a malformed file raises a
:class:`~memsif.errors.TranscriptError` (naming file, sample and position) and nothing is stored.
Files are parsed as data only (JSON or text; no pickle, no eval).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsif.errors import TranscriptError
from memsif.records import Message
from memsif.timeparse import parse_time

_SPEAKER_LINE = re.compile(r"^\s*([^:\n]{1,60}?)\s*:\s?(.*)$")
_DATE_HEADER = re.compile(r"^\s*##\s*(.+?)\s*$")


@dataclass
class Transcript:
    """One conversation ready to ingest; ``messages`` carry ``namespace = sample_id``."""

    sample_id: str
    messages: list[Message]
    format: str
    path: str
    extra: dict[str, Any] = field(default_factory=dict)


def load_transcripts(path: str | Path, sample: str | None = None) -> list[Transcript]:
    """Read every sample of a transcript file (or only ``sample``).

    Format by content: a JSON list/object with ``conversation`` is LoCoMo, with
    ``haystack_sessions`` is LongMemEval; ``.jsonl`` is one ``{"speaker","text","time"}`` per line;
    anything else is plain text (``Speaker: text`` lines, optional ``## <date>`` headers).

    Raises:
        TranscriptError: unreadable file, unknown layout, malformed record, or unknown ``sample``.
    """
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TranscriptError(f"cannot read the file ({exc})", path=str(p)) from exc
    if not raw.strip():
        raise TranscriptError("the transcript holds no messages (the file is empty)", path=str(p))
    name = p.name.lower()
    if name.endswith(".jsonl"):
        found = [_load_jsonl(raw, str(p))]
    elif name.endswith(".json") or raw.lstrip()[:1] in ("[", "{"):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise TranscriptError(f"invalid JSON ({exc.msg})", path=str(p),
                                  position=f"line {exc.lineno}, column {exc.colno}") from exc
        found = _load_json(data, str(p), sample)
    else:
        found = [_load_text(raw, str(p))]
    if sample is not None:
        found = [t for t in found if t.sample_id == sample]
        if not found:
            raise TranscriptError(f"no sample {sample!r} in this file", path=str(p))
    if not any(t.messages for t in found):
        raise TranscriptError("the transcript holds no messages (no non-blank turns)", path=str(p),
                              sample=sample)
    return found


def _load_json(data: Any, path: str, wanted: str | None) -> list[Transcript]:
    items = data if isinstance(data, list) else [data]
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise TranscriptError("each sample must be a JSON object", path=path, position=f"item {i}")
        sid = str(item.get("sample_id") or item.get("question_id") or f"sample-{i}")
        if wanted is not None and sid != wanted:
            continue
        if "conversation" in item:
            out.append(_load_locomo(item, path, i))
        elif "haystack_sessions" in item:
            out.append(_load_longmemeval(item, path, i))
        else:
            raise TranscriptError(
                "unknown layout: expected LoCoMo ('conversation') or LongMemEval ('haystack_sessions')",
                path=path, position=f"item {i}")
    return out


def _msg(namespace: str, mid: str, speaker: Any, text: Any, time, session: str, index: int) -> Message:
    return Message(id=mid, namespace=namespace, speaker=str(speaker).strip(), text=str(text), time=time,
                   session_id=session, index=index)


def _load_locomo(item: dict, path: str, i: int) -> Transcript:
    sid = str(item.get("sample_id") or f"sample-{i}")
    conv = item["conversation"]
    if not isinstance(conv, dict):
        raise TranscriptError("'conversation' must be an object", path=path, sample=sid)
    numbers = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
    messages: list[Message] = []
    seen: set[str] = set()
    for n in numbers:
        turns = conv.get(f"session_{n}")
        if not turns:
            continue  # LoCoMo has sessions with a date and no turns
        if not isinstance(turns, list):
            raise TranscriptError("a session must be a list of turns", path=path, sample=sid,
                                  position=f"session_{n}")
        date_text = conv.get(f"session_{n}_date_time")
        try:
            when = parse_time(date_text) if date_text else None
        except ValueError as exc:
            raise TranscriptError(f"unreadable session date {date_text!r}", path=path, sample=sid,
                                  position=f"session_{n}_date_time") from exc
        for t, turn in enumerate(turns):
            where = f"session_{n} turn {t}"
            if not isinstance(turn, dict) or "speaker" not in turn or ("text" not in turn and
                                                                     "blip_caption" not in turn):
                raise TranscriptError("a turn needs 'speaker' and 'text'", path=path, sample=sid, position=where)
            text = str(turn.get("text") or "").strip()
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]".strip()
            if not text:
                continue
            mid = str(turn.get("dia_id") or f"D{n}:{t + 1}")
            if mid in seen:
                raise TranscriptError(f"duplicate dialogue id {mid!r}", path=path, sample=sid, position=where)
            seen.add(mid)
            messages.append(_msg(sid, mid, turn["speaker"], text, when, f"session_{n}", len(messages)))
    extra = {"qa": item.get("qa", []), "speakers": [conv.get("speaker_a"), conv.get("speaker_b")]}
    return Transcript(sid, messages, "locomo", path, extra)


def _load_longmemeval(item: dict, path: str, i: int) -> Transcript:
    sid = str(item.get("question_id") or f"sample-{i}")
    sessions = item["haystack_sessions"]
    ids = item.get("haystack_session_ids") or [f"s{k}" for k in range(len(sessions))]
    dates = item.get("haystack_dates") or [None] * len(sessions)
    if not (isinstance(sessions, list) and len(ids) == len(sessions) == len(dates)):
        raise TranscriptError("haystack_sessions, haystack_session_ids and haystack_dates must be lists of "
                              "the same length", path=path, sample=sid)
    parsed = []
    for k, (_session_id, date_text) in enumerate(zip(ids, dates, strict=True)):
        try:
            parsed.append(parse_time(date_text) if date_text else None)
        except ValueError as exc:
            raise TranscriptError(f"unreadable date {date_text!r}", path=path, sample=sid,
                                  position=f"haystack_dates[{k}]") from exc
    order = sorted(range(len(sessions)), key=lambda k: (parsed[k] is None, parsed[k] or 0, k))
    messages: list[Message] = []
    answer_ids: list[str] = []
    for k in order:
        turns = sessions[k]
        if not isinstance(turns, list):
            raise TranscriptError("a session must be a list of turns", path=path, sample=sid,
                                  position=f"haystack_sessions[{k}]")
        for t, turn in enumerate(turns):
            where = f"haystack_sessions[{k}][{t}]"
            if not isinstance(turn, dict) or "role" not in turn or "content" not in turn:
                raise TranscriptError("a turn needs 'role' and 'content'", path=path, sample=sid, position=where)
            text = str(turn["content"]).strip()
            if not text:
                continue
            mid = f"{ids[k]}:{t + 1}"
            if turn.get("has_answer"):
                answer_ids.append(mid)
            messages.append(_msg(sid, mid, turn["role"], text, parsed[k], str(ids[k]), len(messages)))
    question_date = item.get("question_date")
    extra = {
        "question": item.get("question"), "answer": item.get("answer"), "question_type": item.get("question_type"),
        "question_date": question_date, "answer_session_ids": item.get("answer_session_ids", []),
        "has_answer_ids": answer_ids,
    }
    return Transcript(sid, messages, "longmemeval", path, extra)


def _load_text(raw: str, path: str) -> Transcript:
    sid = Path(path).stem
    messages: list[Message] = []
    session, turn, when = 1, 0, None
    started = False
    for line_no, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        header = _DATE_HEADER.match(line)
        if header:
            try:
                when = parse_time(header.group(1))
            except ValueError as exc:
                raise TranscriptError(f"unreadable session date {header.group(1)!r}", path=path,
                                      position=f"line {line_no}") from exc
            if started:
                session, turn = session + 1, 0
            continue
        match = _SPEAKER_LINE.match(line)
        if match and match.group(1).strip():
            text = match.group(2).strip()
            if not text:
                continue
            turn += 1
            started = True
            messages.append(_msg(sid, f"D{session}:{turn}", match.group(1), text, when, f"session_{session}",
                                 len(messages)))
        elif messages and messages[-1].session_id == f"session_{session}":
            messages[-1].text += "\n" + line.strip()  # continuation of a multi-line message
        else:
            raise TranscriptError("expected 'Speaker: text' lines (or '## DATE' session headers)", path=path,
                                  position=f"line {line_no}")
    return Transcript(sid, messages, "text", path)


def _load_jsonl(raw: str, path: str) -> Transcript:
    sid = Path(path).stem
    messages: list[Message] = []
    seen: set[str] = set()
    for line_no, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TranscriptError(f"invalid JSON ({exc.msg})", path=path, position=f"line {line_no}") from exc
        if not isinstance(obj, dict) or "speaker" not in obj or "text" not in obj:
            raise TranscriptError('each line must be {"speaker": ..., "text": ..., "time": ...}', path=path,
                                  position=f"line {line_no}")
        text = str(obj["text"]).strip()
        if not text:
            continue
        when = None
        if obj.get("time"):
            try:
                when = parse_time(obj["time"])
            except ValueError as exc:
                raise TranscriptError(f"unreadable time {obj['time']!r}", path=path,
                                      position=f"line {line_no}") from exc
        session = str(obj.get("session") or (when.date().isoformat() if when else "1"))
        mid = str(obj.get("id") or f"J{line_no}")
        if mid in seen:
            raise TranscriptError(f"duplicate id {mid!r}", path=path, position=f"line {line_no}")
        seen.add(mid)
        messages.append(_msg(sid, mid, obj["speaker"], text, when, session, len(messages)))
    return Transcript(sid, messages, "jsonl", path)
