"""Real histories as people have them, on every entry path (files, the Python API, MCP, the page): file
names that are not UTF-8. Fixtures are made up."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from memsif.errors import MemSIFError
from memsif.io import as_memories, load_transcripts
from memsif.records import Message
from tests.fakes import FakeLLM

LATIN1_NAME = b"caf\xe9-chat"  # "café-chat" written by a system whose file names are Latin-1


def _llm() -> FakeLLM:
    return FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5})


def _file(folder: Path, stem: bytes, suffix: str, content: str) -> Path:
    """A file whose name is ``stem`` + ``suffix`` as bytes (not necessarily UTF-8)."""
    path = os.path.join(os.fsencode(folder), stem + suffix.encode())
    with open(path, "w", encoding="utf-8") as f:
        f.write(content)
    return Path(os.fsdecode(path))


# ------------------------------------------------------------------ class: file names as namespaces
NAMED_BY_FILE = {
    "text": (".txt", "Ana: I adopted a beagle named Max.\nBen: Lovely!\n"),
    "jsonl": (".jsonl", "\n".join(json.dumps({"speaker": s, "text": t}) for s, t in [("Ana", "hi"), ("Ben", "yo")])),
    "openai": (".json", json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])),
    "chatgpt": (".json", json.dumps([{"id": "c1", "title": "t", "current_node": "n1", "mapping": {
        "n0": {"message": {"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["hi"]},
                           "create_time": 1709460000.0}, "parent": None, "children": ["n1"]},
        "n1": {"message": {"author": {"role": "assistant"}, "content": {"content_type": "text", "parts": ["yo"]},
                           "create_time": 1709460001.0}, "parent": "n0", "children": []}}}])),
}


@pytest.mark.parametrize("fmt", sorted(NAMED_BY_FILE))
def test_a_file_name_that_is_not_utf8_names_a_memory_readably_and_the_build_ends(tmp_path, fmt, engine_factory):
    suffix, content = NAMED_BY_FILE[fmt]
    path = _file(tmp_path, LATIN1_NAME, suffix, content)
    [memory] = as_memories(load_transcripts(path))
    assert memory.sample_id == "café-chat"
    memory.sample_id.encode("utf-8")  # a store, an id and a terminal take it
    engine = engine_factory(llm=_llm())
    report = engine.ingest_transcript(memory)
    assert report.namespace == "café-chat" and engine.namespaces() == ["café-chat"]
    assert any("not valid UTF-8" in w and "'café-chat'" in w for w in memory.warnings), memory.warnings


def test_an_id_from_a_file_that_is_not_valid_unicode_is_repaired(tmp_path, engine_factory):
    """A JSON escape of half a surrogate pair in a sample id or a message id (LoCoMo) would end the build
    at its first write; it is replaced like the same fault in a message's text."""
    data = [{"sample_id": "conv-\udce9", "conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023",
                                                          "session_1": [{"speaker": "Ana", "text": "hi",
                                                                         "dia_id": "D1:\ud83d"}]}}]
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    [t] = load_transcripts(path)
    assert t.sample_id == "conv-\ufffd" and t.messages[0].id == "D1:\ufffd"
    engine = engine_factory(llm=_llm())
    assert engine.ingest_transcript(t).messages == 1


@pytest.mark.parametrize(("namespace", "said"), [
    ("caf\udce9", "is not valid text"), ("a\x00b", "control character"), ("  ", "empty"),
    ("x" * 201, "at most 200"),
])
def test_the_python_api_refuses_a_namespace_no_store_can_keep_before_any_work(engine_factory, namespace, said):
    engine = engine_factory(llm=_llm())
    message = Message(id="m1", namespace="ok", speaker="Ana", text="hi", time=datetime(2024, 3, 3))
    with pytest.raises(MemSIFError, match=said):
        engine.ingest([message], namespace=namespace)
    assert engine.namespaces() == [], "nothing was written"
    engine.ingest([message])
    exported = engine.export_namespace("ok")
    with pytest.raises(MemSIFError, match=said):
        engine.import_namespace(exported, namespace=namespace)
    assert engine.namespaces() == ["ok"]


def test_the_page_builds_from_a_file_whose_name_is_not_utf8(tmp_path, engine_factory):
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector

    engine = engine_factory(llm=_llm())
    path = _file(tmp_path, LATIN1_NAME, ".txt", "## 1 June 2024\nMia: My bike is red.\nTom: Nice bike!\n")
    *_, (ns, source, summary, _fig, rows) = list(BuildTab(Inspector(engine)).build(
        str(path), None, "ui-0123456789ab", None, None, progress=lambda *a, **k: None))
    assert ns == "ui-0123456789ab" and not source.failed and len(rows) == 1, summary
    assert source.name == "café-chat.txt"


# ------------------------------------------------------------------ class: chat logs people actually have
#: layout → (the log, each message as (speaker, text, time) it must give)
CHAT_LOGS = {
    "whatsapp-android-12h": (
        "12/31/23, 10:02\u202fPM - Messages and calls are end-to-end encrypted. No one outside of this chat can "
        "read them.\n12/31/23, 10:02\u202fPM - Ana: Happy new year!\n12/31/23, 10:03\u202fPM - Ben: We adopted a "
        "beagle\ncalled Max today.\n1/1/24, 9:15\u202fAM - Ana: Congrats",
        [("Ana", "Happy new year!", "2023-12-31 22:02"),
         ("Ben", "We adopted a beagle\ncalled Max today.", "2023-12-31 22:03"),
         ("Ana", "Congrats", "2024-01-01 09:15")]),
    "whatsapp-android-24h-dots": (
        "31.12.23, 22:02 - Ana: Frohes neues Jahr!\n31.12.23, 22:03 - Ben joined using this group's invite link\n"
        "01.01.24, 09:15 - Ben: Danke",
        [("Ana", "Frohes neues Jahr!", "2023-12-31 22:02"), ("Ben", "Danke", "2024-01-01 09:15")]),
    "whatsapp-ios": (
        "[31/12/2023, 22:02:11] \u200eAna: Happy new year!\n[31/12/2023, 22:03:05] Ben: You too\n"
        "[01/01/2024, 09:15:00] Ana: Congrats",
        [("Ana", "Happy new year!", "2023-12-31 22:02"), ("Ben", "You too", "2023-12-31 22:03"),
         ("Ana", "Congrats", "2024-01-01 09:15")]),
    "time-only-with-headers": (
        "## 1 March 2024\n[10:02] Ana: Off to Lyon\n[10:05] Ben: Safe trip\n## 2 March 2024\n[08:00] Ana: Arrived",
        [("Ana", "Off to Lyon", "2024-03-01 10:02"), ("Ben", "Safe trip", "2024-03-01 10:05"),
         ("Ana", "Arrived", "2024-03-02 08:00")]),
    "iso": (
        "[2024-03-01 10:02] Ana: Off to Lyon\n[2024-03-01 10:05:30] Ben: Safe trip",
        [("Ana", "Off to Lyon", "2024-03-01 10:02"), ("Ben", "Safe trip", "2024-03-01 10:05")]),
    "full-width-colon": (
        "## 2024年3月1日\n小明：我下周去东京。\n小红：太好了！\n",
        [("小明", "我下周去东京。", None), ("小红", "太好了！", None)]),
}


def _said(t) -> list[tuple[str, str, str | None]]:
    return [(m.speaker, m.text, m.time.strftime("%Y-%m-%d %H:%M") if m.time else None) for m in t.messages]


@pytest.mark.parametrize("layout", sorted(CHAT_LOGS))
def test_a_chat_log_is_read_with_its_speakers_dates_and_continuation_lines(tmp_path, layout):
    log, expected = CHAT_LOGS[layout]
    path = tmp_path / "chat.txt"
    path.write_text(log, encoding="utf-8")
    [t] = load_transcripts(path)
    assert _said(t) == expected, t.messages
    if layout.startswith("whatsapp-android"):
        assert any("left out 1 line of the chat app's own notices" in w for w in t.warnings), t.warnings


def test_a_full_width_colon_log_keeps_its_session_date(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text("## 1 March 2024\n小明：我下周去东京。\n小红：太好了！\n", encoding="utf-8")
    [t] = load_transcripts(path)
    assert [(m.speaker, m.time.date().isoformat()) for m in t.messages] == [("小明", "2024-03-01"),
                                                                            ("小红", "2024-03-01")]


def test_a_chat_log_whose_dates_could_be_either_order_is_refused_with_the_format_that_settles_it(tmp_path):
    from memsif.errors import TranscriptError

    path = tmp_path / "chat.txt"
    path.write_text("[10/03/2024, 10:02] Ana: hi\n[10/03/2024, 10:03] Ben: yo\n", encoding="utf-8")
    with pytest.raises(TranscriptError, match=r"could be day/month or month/day.*--format chatlog-dmy"):
        load_transcripts(path)
    [t] = load_transcripts(path, format="chatlog-dmy")
    assert t.messages[0].time == datetime(2024, 3, 10, 10, 2)
    [t] = load_transcripts(path, format="chatlog-mdy")
    assert t.messages[0].time == datetime(2024, 10, 3, 10, 2)


def test_the_python_api_ingests_a_chat_log_by_day(tmp_path, engine_factory):
    path = tmp_path / "chat.txt"
    path.write_text(CHAT_LOGS["whatsapp-ios"][0], encoding="utf-8")
    engine = engine_factory(llm=_llm())
    [t] = load_transcripts(path)
    engine.ingest_transcript(t, namespace="wa")
    stored = engine.messages("wa")
    assert [m.session_id for m in stored] == ["2023-12-31", "2023-12-31", "2024-01-01"]
    assert engine.ingest_transcript(load_transcripts(path)[0], namespace="wa").messages == 0, "ingested once"


def test_the_page_builds_from_a_chat_log(tmp_path, engine_factory):
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector

    path = tmp_path / "WhatsApp Chat with Ben.txt"
    path.write_text(CHAT_LOGS["whatsapp-android-12h"][0], encoding="utf-8")
    engine = engine_factory(llm=_llm())
    *_, (ns, source, summary, _fig, _rows) = list(BuildTab(Inspector(engine)).build(
        str(path), None, "ui-0123456789ab", None, None, progress=lambda *a, **k: None))
    assert not source.failed, summary
    assert [m.speaker for m in engine.messages(ns)] == ["Ana", "Ben", "Ana"]
