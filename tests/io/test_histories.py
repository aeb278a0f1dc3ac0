"""Real histories as people have them, on every entry path (files, the Python API, MCP, the page): file
names that are not UTF-8. Fixtures are made up."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

import pytest

from memsif.errors import MemSIFError
from memsif.io import as_memories, load_transcripts
from memsif.records import Message
from tests import ROOT
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


# ------------------------------------------------------------------ class: a chat app's own words in a message's place
#: A WhatsApp export as the apps write it, with every kind of placeholder beside what was said.
PLACEHOLDERS_ANDROID = (
    "13/04/24, 9:00 AM - Messages and calls are end-to-end encrypted. No one outside of this chat can read them.\n"
    "13/04/24, 9:01 AM - Ana: I adopted a beagle named Max!\n"
    "13/04/24, 9:02 AM - Ana: <Media omitted>\n"
    "13/04/24, 9:03 AM - Ben: This message was deleted\n"
    "13/04/24, 9:04 AM - Ana: You deleted this message\n"
    "13/04/24, 9:05 AM - Ben: Missed voice call\n"
    "13/04/24, 9:06 AM - Ben: null\n"
    "13/04/24, 9:07 AM - Ben: Max is a great name <This message was edited>\n"
    "13/04/24, 9:08 AM - Ana: IMG-20240413-WA0003.jpg (file attached)\n"
    "Max at the park\n"
    "13/04/24, 9:09 AM - Ben: Missed video call, Tap to call back\n"
    "13/04/24, 9:10 AM - Ana: I missed the voice call, sorry\n")
PLACEHOLDERS_IOS = (
    "[12/04/2024, 09:00:00] Dog chat: \u200eMessages and calls are end-to-end encrypted. No one outside of this "
    "chat, not even WhatsApp, can read or listen to them.\n"
    "[12/04/2024, 09:01:00] Ana: I adopted a beagle named Max!\n"
    "[12/04/2024, 09:02:00] Ana: \u200eimage omitted\n"
    "[12/04/2024, 09:03:00] Ben: \u200esticker omitted\n"
    "[12/04/2024, 09:04:00] Ana: \u200e<attached: 00000012-PHOTO-2024-04-12-09-04-00.jpg>\n"
    "[12/04/2024, 09:05:00] Ben: \u200eVoice call, \u200e2 min\n"
    "[13/04/2024, 10:00:00] Ben: Max is a great name \u200e<This message was edited>\n")
KEPT_ANDROID = [("Ana", "I adopted a beagle named Max!"), ("Ben", "Max is a great name"),
                ("Ana", "[attachment: IMG-20240413-WA0003.jpg]\nMax at the park"),
                ("Ana", "I missed the voice call, sorry")]
KEPT_IOS = [("Ana", "I adopted a beagle named Max!"),
            ("Ana", "[attachment: 00000012-PHOTO-2024-04-12-09-04-00.jpg]"), ("Ben", "Max is a great name")]


@pytest.mark.parametrize(("log", "kept", "counts"), [
    (PLACEHOLDERS_ANDROID, KEPT_ANDROID, "6 messages that hold only the chat app's own words, not what anyone said "
                                         "(2 calls, 2 deleted messages, 1 media file not in the export, 1 view-once "
                                         "message)"),
    (PLACEHOLDERS_IOS, KEPT_IOS, "4 messages that hold only the chat app's own words")])
def test_a_chat_apps_own_words_are_left_out_counted_and_an_edit_or_attachment_keeps_what_was_said(tmp_path, log,
                                                                                               kept, counts):
    path = tmp_path / "WhatsApp Chat with Ben.txt"
    path.write_text(log, encoding="utf-8")
    [t] = load_transcripts(path)
    assert [(m.speaker, m.text) for m in t.messages] == kept
    assert any(counts in w for w in t.warnings), t.warnings
    assert "Dog chat" not in {m.speaker for m in t.messages}, "the chat's name is no speaker"
    ids = [m.id for m in t.messages]
    numbers = [int(i.rsplit(":", 1)[1]) for i in ids]
    assert len(set(ids)) == len(ids) and numbers != list(range(1, len(ids) + 1)), \
        "each message keeps the number of its line in the export"


def test_the_api_and_the_page_leave_the_placeholders_out_and_a_memory_stored_before_reads_again_without_a_conflict(
        tmp_path, engine_factory):
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector

    path = tmp_path / "WhatsApp Chat with Ben.txt"  # the CLI and MCP read files with the same loader
    path.write_text(PLACEHOLDERS_ANDROID, encoding="utf-8")
    engine = engine_factory(llm=_llm())
    engine.ingest_transcript(load_transcripts(path)[0], namespace="api")
    assert [(m.speaker, m.text) for m in engine.messages("api")] == KEPT_ANDROID
    *_, (ns, _source, summary, _fig, _rows) = list(BuildTab(Inspector(engine)).build(
        str(path), None, "ui-0123456789ab", None, None, progress=lambda *a, **k: None))
    assert [(m.speaker, m.text) for m in engine.messages(ns)] == KEPT_ANDROID
    assert "hold only the chat app's own words" in summary

    # stored as the loader read it before: the placeholders as speech, the marks in the text
    before = load_transcripts(path)[0]
    raw = {m.id: m for m in before.messages}
    old = engine_factory(llm=_llm())
    old_messages = [m.model_copy(update={"text": text}) if m.id in raw else m for m, text in zip(
        before.messages, ["I adopted a beagle named Max!", "Max is a great name <This message was edited>",
                          "IMG-20240413-WA0003.jpg (file attached)\nMax at the park",
                          "I missed the voice call, sorry"], strict=True)]
    before.messages = old_messages
    old.ingest_transcript(before, namespace="wa")
    again = old.ingest_transcript(load_transcripts(path)[0], namespace="wa")
    assert again.messages == 0, "read again: already stored, no conflict"


# ------------------------------------------------------------------ ChatGPT exports as people download them
def _node_message(role: str, parts: list, content_type: str = "text", create_time: float | None = 1709460000.0,
                  **extra) -> dict:
    return {"author": {"role": role}, "content": {"content_type": content_type, "parts": parts},
            "create_time": create_time, **extra}


def _conversation(cid: str, messages: list[dict], **extra) -> dict:
    mapping, parent = {}, None
    for k, m in enumerate(messages):
        mapping[f"{cid}-n{k}"] = {"message": m, "parent": parent,
                                  "children": [f"{cid}-n{k + 1}"] if k + 1 < len(messages) else []}
        parent = f"{cid}-n{k}"
    return {"id": cid, "title": f"chat {cid}", "create_time": 1709450000.0, "current_node": parent,
            "mapping": mapping, **extra}


def _export(tmp_path: Path, conversations: list[dict], name: str = "conversations.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(conversations), encoding="utf-8")
    return path


# ------------------------------------------------------------------ class: voice conversations
VOICE = [
    _node_message("user", [{"content_type": "audio_transcription", "text": "I moved to Lyon last week."},
                           {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://file_1"}],
                  content_type="multimodal_text"),
    _node_message("assistant", [{"content_type": "audio_transcription", "text": "How do you like it?"},
                                {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://file_2"}],
                  content_type="multimodal_text"),
    _node_message("user", [{"content_type": "real_time_user_audio_video_asset_pointer",
                            "audio_asset_pointer": {"asset_pointer": "sediment://file_3"}}],
                  content_type="multimodal_text"),
    _node_message("user", [{"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"},
                           "Here is the view."], content_type="multimodal_text"),
]


def test_a_voice_message_keeps_its_transcription_and_the_load_names_what_it_left_out(tmp_path):
    [t] = as_memories(load_transcripts(_export(tmp_path, [_conversation("c1", VOICE)])))
    assert [m.text for m in t.messages] == ["I moved to Lyon last week.", "How do you like it?",
                                            "[image]\nHere is the view."]
    assert "kept the transcription of 2 voice messages; their recordings are not kept" in t.warnings, t.warnings
    assert any("left out 1 voice message without a transcription" in w for w in t.warnings), t.warnings


# ------------------------------------------------------------------ class: model reasoning inside transcripts
THINK = "<think>The user wants a city. Lyon fits.</think>\nLyon."
#: format → (file name, content): an assistant reply with its reasoning, in that format's own way
REASONING = {
    "text": ("c.txt", f"## 3 March 2024\nAna: Where should I move?\nassistant: {THINK}\n"),
    "jsonl": ("c.jsonl", "\n".join(json.dumps(x) for x in [
        {"speaker": "Ana", "text": "Where should I move?"},
        {"speaker": "assistant", "text": "Lyon.", "reasoning_content": "The user wants a city."}])),
    "openai": ("c.json", json.dumps([
        {"role": "user", "content": "Where should I move?"},
        {"role": "assistant", "content": [{"type": "reasoning", "text": "The user wants a city."},
                                          {"type": "text", "text": "Lyon."}]}])),
    "claude": ("c.json", json.dumps([{"uuid": "c1", "chat_messages": [
        {"sender": "human", "text": "Where should I move?", "created_at": "2024-03-03T10:00:00Z"},
        {"sender": "assistant", "text": "Lyon.", "created_at": "2024-03-03T10:00:05Z",
         "content": [{"type": "thinking", "thinking": "The user wants a city."},
                     {"type": "text", "text": "Lyon."}]}]}])),
    "chatgpt": ("c.json", json.dumps([_conversation("c1", [
        _node_message("user", ["Where should I move?"]),
        _node_message("assistant", [], content_type="thoughts"),
        _node_message("assistant", [THINK])])])),
    "locomo": ("c.json", json.dumps([{"sample_id": "s", "conversation": {
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ana", "text": "Where should I move?", "dia_id": "D1:1"},
                      {"speaker": "Bo", "text": THINK, "dia_id": "D1:2"}]}}])),
    "chatlog": ("c.txt", f"[2024-03-01 10:02] Ana: Where should I move?\n[2024-03-01 10:03] Bot: {THINK}\n"),
}


@pytest.mark.parametrize("fmt", sorted(REASONING))
def test_a_models_reasoning_is_left_out_and_counted_in_every_format(tmp_path, fmt):
    name, content = REASONING[fmt]
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    [t] = as_memories(load_transcripts(path))
    assert [m.text for m in t.messages] == ["Where should I move?", "Lyon."], t.messages
    assert any(w.startswith("left out 1 reasoning block") or ": left out 1 reasoning block" in w
               for w in t.warnings), t.warnings


def test_a_message_that_held_only_reasoning_is_left_out(engine_factory):
    from memsif.io.roles import without_reasoning

    assert without_reasoning("<think>cut off while thinking") == ("", 1)
    assert without_reasoning("thinking in the template</think>Lyon.") == ("Lyon.", 1)
    assert without_reasoning("No tags: <b>bold</b>.") == ("No tags: <b>bold</b>.", 0)


# ------------------------------------------------------------------ class: do-not-remember
def test_a_conversation_marked_do_not_remember_stays_out_unless_asked_for(tmp_path, engine_factory):
    path = _export(tmp_path, [
        _conversation("c1", [_node_message("user", ["I adopted a beagle named Max."])]),
        _conversation("c2", [_node_message("user", ["My therapist says I should rest."])], is_do_not_remember=True)])
    [t] = as_memories(load_transcripts(path))
    assert [m.text for m in t.messages] == ["I adopted a beagle named Max."]
    assert [w for w in t.warnings if "do-not-remember" in w] == [
        "left out 1 conversation marked do-not-remember (“chat c2”): include it with --include-do-not-remember "
        "(Python: include_do_not_remember=True)"]
    [t] = as_memories(load_transcripts(path, include_do_not_remember=True))
    assert len(t.messages) == 2 and "included 1 conversation marked do-not-remember, as asked" in t.warnings
    engine = engine_factory(llm=_llm())
    engine.ingest_transcript(as_memories(load_transcripts(path))[0], namespace="me")
    assert "therapist" not in " ".join(m.text for m in engine.messages("me"))


def test_a_file_of_only_do_not_remember_conversations_is_refused_with_how_to_include_them(tmp_path):
    from memsif.errors import TranscriptError

    path = _export(tmp_path, [_conversation("c2", [_node_message("user", ["private"])], is_do_not_remember=True)])
    with pytest.raises(TranscriptError, match="every conversation of this file is marked do-not-remember"):
        load_transcripts(path)


def test_the_cli_includes_do_not_remember_conversations_only_when_asked(tmp_path, monkeypatch):
    from memsif import cli

    path = _export(tmp_path, [
        _conversation("c1", [_node_message("user", ["I adopted a beagle named Max."])]),
        _conversation("c2", [_node_message("user", ["private"])], do_not_remember=True)])
    seen = {}

    def spy(*args, **kwargs):  # what the command asked of the loader; nothing is built
        seen.update(kwargs)
        raise SystemExit(0)

    monkeypatch.setattr("memsif.io.load_transcripts", spy)
    for flag, expected in (([], False), (["--include-do-not-remember"], True)):
        with pytest.raises(SystemExit):
            cli.main(["ingest", str(path), "--data-dir", str(tmp_path / "d"), "--no-progress", *flag])
        assert seen["include_do_not_remember"] is expected


# ------------------------------------------------------------------ class: messages without a time of their own
def test_a_message_without_its_own_time_takes_its_conversations_and_the_load_says_so(tmp_path):
    path = _export(tmp_path, [_conversation("c1", [
        _node_message("user", ["first, undated"], create_time=None),
        _node_message("assistant", ["dated"], create_time=1709460100.0),
        _node_message("user", ["undated after a dated one"], create_time=None)])])
    [t] = as_memories(load_transcripts(path))
    times = [m.time for m in t.messages]
    assert times[0] == datetime.utcfromtimestamp(1709450000.0), "the conversation's start"
    assert times[2] == times[1] == datetime.utcfromtimestamp(1709460100.0), "the message before it"
    assert any("2 messages carry no time of their own" in w for w in t.warnings), t.warnings


@pytest.mark.parametrize("app", ["chatgpt", "claude"])
def test_a_conversation_whose_every_message_lacks_its_time_takes_the_conversations_with_the_same_warning(
        tmp_path, app, engine_factory):
    if app == "chatgpt":
        path = _export(tmp_path, [_conversation("c1", [_node_message("user", ["I moved to Lyon"], create_time=None),
                                                       _node_message("assistant", ["Nice"], create_time=None)])])
        started = datetime.utcfromtimestamp(1709450000.0)
    else:
        said = [{"sender": "human", "text": "I moved to Lyon", "created_at": None},
                {"sender": "assistant", "text": "Nice", "created_at": None}]
        path = _export(tmp_path, [{"uuid": "c1", "name": "Lyon", "created_at": "2024-03-03T10:00:00Z",
                                   "chat_messages": said}])
        started = datetime(2024, 3, 3, 10, 0)
    [t] = as_memories(load_transcripts(path))
    assert [m.time for m in t.messages] == [started, started]
    assert any("2 messages carry no time of their own" in w for w in t.warnings), t.warnings

    # a memory stored before, undated, reads the file again without a conflict
    engine = engine_factory(llm=_llm())
    [before] = as_memories(load_transcripts(path))
    for m in before.messages:
        m.time = None
    engine.ingest_transcript(before, namespace="old")
    assert engine.ingest_transcript(as_memories(load_transcripts(path))[0], namespace="old").messages == 0


@pytest.mark.parametrize(("name", "content", "undated"), [
    ("c.jsonl", "\n".join(json.dumps(x) for x in [{"speaker": "Ana", "text": "no time", "session": "a"},
                                                   {"speaker": "Ana", "text": "dated", "time": "2024-03-03T10:00:00",
                                                    "session": "b"}]), 1),
    ("c.txt", "Ana: before any header\n## 3 March 2024\nAna: dated\n", 1),
])
def test_a_message_left_undated_among_dated_ones_is_warned_about(tmp_path, name, content, undated):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    [t] = load_transcripts(path)
    assert sum(m.time is None for m in t.messages) == undated
    assert any("no date while the others do" in w and "resolves against nothing" in w for w in t.warnings), t.warnings


def test_the_page_keeps_a_voice_transcription_and_leaves_reasoning_and_do_not_remember_out(tmp_path, engine_factory):
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector

    path = _export(tmp_path, [
        _conversation("c1", [*VOICE[:2], _node_message("assistant", [THINK])]),
        _conversation("c2", [_node_message("user", ["private"])], is_do_not_remember=True)])
    engine = engine_factory(llm=_llm())
    *_, (ns, source, summary, _fig, _rows) = list(BuildTab(Inspector(engine)).build(
        str(path), None, "ui-0123456789ab", None, None, progress=lambda *a, **k: None))
    assert not source.failed, summary
    assert [m.text for m in engine.messages(ns)] == ["I moved to Lyon last week.", "How do you like it?", "Lyon."]
    for said in ("do-not-remember", "reasoning block", "transcription of 2 voice messages"):
        assert said in summary, summary


# ------------------------------------------------------------------ class: today's ChatGPT export, split and zipped
def _zip(path: Path, members: dict[str, str | bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


PARTS = [[_conversation(f"a{k}", [_node_message("user", [f"part one, chat {k}"], create_time=1709460000.0 + k)])
          for k in range(2)],
         [_conversation(f"b{k}", [_node_message("user", [f"part two, chat {k}"], create_time=1709470000.0 + k)])
          for k in range(2)]]


@pytest.mark.parametrize("layout", ["zip", "zip-parts", "folder-parts", "zip-in-a-folder-of-the-zip"])
def test_an_export_in_parts_or_zipped_is_one_history(tmp_path, layout, engine_factory):
    if layout == "zip":
        path = _zip(tmp_path / "chatgpt-export.zip", {"conversations.json": json.dumps(PARTS[0] + PARTS[1]),
                                                      "chat.html": "<html/>", "file-abc.png": b"\x89PNG"})
    elif layout == "zip-parts":
        path = _zip(tmp_path / "chatgpt-export.zip", {"conversations-001.json": json.dumps(PARTS[1]),
                                                      "conversations-000.json": json.dumps(PARTS[0]),
                                                      "user.json": "{}"})
    elif layout == "folder-parts":
        path = tmp_path / "chatgpt-export"
        path.mkdir()
        for k, part in enumerate(PARTS):
            (path / f"conversations-{k:03d}.json").write_text(json.dumps(part), encoding="utf-8")
    else:
        path = _zip(tmp_path / "chatgpt-export.zip", {"export/conversations-000.json": json.dumps(PARTS[0]),
                                                      "export/conversations-001.json": json.dumps(PARTS[1])})
    [memory] = as_memories(load_transcripts(path))
    assert memory.sample_id == "chatgpt-export"
    assert [m.text for m in memory.messages] == ["part one, chat 0", "part one, chat 1", "part two, chat 0",
                                                 "part two, chat 1"]
    if "parts" in layout:
        assert any("read 2 parts of one export" in w for w in memory.warnings), memory.warnings
    engine = engine_factory(llm=_llm())
    assert engine.ingest_transcript(memory).total_messages == 4


def test_parts_ingested_one_by_one_join_one_memory(tmp_path, engine_factory):
    engine = engine_factory(llm=_llm())
    for k, part in enumerate(PARTS):
        path = tmp_path / f"conversations-{k:03d}.json"
        path.write_text(json.dumps(part), encoding="utf-8")
        [memory] = as_memories(load_transcripts(path))
        assert memory.sample_id == "conversations"
        engine.ingest_transcript(memory)
    assert engine.namespaces() == ["conversations"] and len(engine.messages("conversations")) == 4


def test_a_claude_export_zip_is_read_too(tmp_path):
    claude = [{"uuid": "c1", "name": "Lyon", "chat_messages": [
        {"sender": "human", "text": "Moving to Lyon", "created_at": "2024-03-03T10:00:00Z"}]}]
    path = _zip(tmp_path / "data-2024-03-03.zip", {"conversations.json": json.dumps(claude), "users.json": "[]",
                                                   "projects.json": "[]"})
    [memory] = as_memories(load_transcripts(path))
    assert memory.format == "claude" and [m.text for m in memory.messages] == ["Moving to Lyon"]


def test_a_zip_without_an_export_is_refused_naming_what_it_holds(tmp_path):
    from memsif.errors import TranscriptError

    path = _zip(tmp_path / "photos.zip", {"IMG_001.jpg": b"\xff\xd8", "notes.txt": "Ana: hi"})
    with pytest.raises(TranscriptError, match=r"holds no conversations.json.*IMG_001.jpg, notes.txt"):
        load_transcripts(path)


def test_a_whatsapp_export_zip_is_read_as_its_chat_log_with_or_without_its_media(tmp_path, engine_factory):
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector

    for name, members in (("WhatsApp Chat - Ben.zip", {"_chat.txt": PLACEHOLDERS_IOS,
                                                       "00000012-PHOTO-2024-04-12-09-04-00.jpg": b"\xff\xd8"}),
                          ("chat.zip", {"WhatsApp Chat with Ben.txt": PLACEHOLDERS_ANDROID})):
        [t] = load_transcripts(_zip(tmp_path / name, members))
        assert t.format == "chatlog" and [(m.speaker, m.text) for m in t.messages] == \
            (KEPT_IOS if "_chat.txt" in members else KEPT_ANDROID)
    engine = engine_factory(llm=_llm())
    *_, (ns, source, summary, _fig, _rows) = list(BuildTab(Inspector(engine)).build(
        str(tmp_path / "chat.zip"), None, "ui-0123456789ab", None, None, progress=lambda *a, **k: None))
    assert not source.failed, summary
    assert [(m.speaker, m.text) for m in engine.messages(ns)] == KEPT_ANDROID


def _flagged(path: Path, method: int | None = None, encrypted: bool = False) -> Path:
    """The ZIP at ``path`` with its members' headers saying another compression ``method``, or encryption
    (what Windows' Deflate64 and a password-protected ZIP write; Python's zipfile writes neither)."""
    data = bytearray(path.read_bytes())
    for signature, flags, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        at = data.find(signature)
        while at >= 0:
            if encrypted:
                data[at + flags] |= 0x1
            if method is not None:
                data[at + method_at:at + method_at + 2] = method.to_bytes(2, "little")
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("members", [{"conversations.json": "[]"}, {"_chat.txt": "[13/04/2024, 09:01] Ana: hi"}])
@pytest.mark.parametrize(("method", "encrypted", "said"), [
    (9, False, r"compressed with Deflate64.*Unpack it \(7-Zip, or unzip\) and upload .* itself"),
    (None, True, r"protected by a password.*Open it with its password.*upload .* itself")])
def test_a_zip_that_cannot_be_opened_is_refused_with_its_cause_and_the_fix_on_every_path(
        tmp_path, engine_factory, members, method, encrypted, said):
    from memsif.errors import TranscriptError
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector

    path = _flagged(_zip(tmp_path / "export.zip", members), method, encrypted)
    with pytest.raises(TranscriptError, match=said):
        load_transcripts(path)
    engine = engine_factory(llm=_llm())
    *_, (_ns, source, summary, _fig, _rows) = list(BuildTab(Inspector(engine)).build(
        str(path), None, "ui-0123456789ab", None, None, progress=lambda *a, **k: None))
    assert source is None and re.search(said, summary) and "Traceback" not in summary, summary
    assert engine.namespaces() == []


def test_the_page_builds_one_memory_from_an_export_zip(tmp_path, engine_factory):
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector

    path = _zip(tmp_path / "chatgpt-export.zip", {"conversations-000.json": json.dumps(PARTS[0]),
                                                  "conversations-001.json": json.dumps(PARTS[1])})
    engine = engine_factory(llm=_llm())
    *_, (ns, source, summary, _fig, _rows) = list(BuildTab(Inspector(engine)).build(
        str(path), None, "ui-0123456789ab", None, None, progress=lambda *a, **k: None))
    assert not source.failed, summary
    assert len(engine.messages(ns)) == 4


# ------------------------------------------------------------------ class: readers beside a writer
def _stored_memory(tmp_path: Path, engine_factory):
    """A memory in an embedded folder (closed again), built on fakes that let an answer use evidence."""
    from memsif.store import MemoryStore
    from tests.answer.test_query import CFG, _messages
    from tests.fakes import KeywordEmbedder

    llm = FakeLLM({"core_extract": json.dumps({"facts": []}), "sufficiency": 0.1, "answer": "Camping."})
    embedder = KeywordEmbedder({"pottery": 0, "lake": 1, "camp": 1})
    writer = engine_factory(llm=llm, embedder=embedder, store=MemoryStore(path=tmp_path / "data" / "qdrant"), **CFG)
    writer.ingest(_messages())
    writer.store.close()
    return writer.config, llm, embedder


def test_a_read_never_holds_the_folder_so_a_writer_can_start_meanwhile(tmp_path, engine_factory):
    import subprocess
    import sys

    from memsif.store import open_store

    config, _, _ = _stored_memory(tmp_path, engine_factory)
    reader = open_store(config, when_busy="read")
    assert reader.read_only and "a read never holds the folder" in reader.opened_from
    code = ("import sys; from memsif.store import MemoryStore; s = MemoryStore(path=sys.argv[1]); "
            "print(s.count('message', 't')); s.close()")
    writer = subprocess.run([sys.executable, "-c", code, str(tmp_path / "data" / "qdrant")], capture_output=True,
                            text=True, cwd=ROOT)
    assert writer.returncode == 0 and writer.stdout.strip() == "4", writer.stderr
    assert reader.count("message", "t") == 4, "the reader goes on reading its snapshot"
    reader.close()


def test_an_answer_read_from_a_snapshot_adds_its_evidence_where_the_folder_is_free(tmp_path, engine_factory):
    import argparse

    from memsif import cli
    from memsif.engine import MemSIF
    from memsif.store import MemoryStore, open_store
    from tests.fakes import TableEntities

    config, llm, embedder = _stored_memory(tmp_path, engine_factory)
    reader = MemSIF(config, llm=llm, embedder=embedder, entities=TableEntities(),
                    store=open_store(config, when_busy="read"))
    result = reader.ask("Where did Melanie go camping?", namespace="t", accumulate=False)
    assert result.evidence_used and not result.clusters_touched and not result.errors
    cli._accumulate_in_folder(argparse.Namespace(namespace="t"), reader, result)
    assert result.clusters_touched and not result.errors, result.errors
    folder = MemoryStore(path=tmp_path / "data" / "qdrant")
    assert {c.id for c in folder.clusters("t")} >= set(result.clusters_touched), "written in the folder itself"
    holder = folder  # another process holding the folder: the answer's trace says its evidence was not added
    again = reader.ask("Where did Melanie go camping?", namespace="t", accumulate=False)
    cli._accumulate_in_folder(argparse.Namespace(namespace="t"), reader, again)
    assert any("not added to the ActiveFact clusters" in e for e in again.errors), again.errors
    holder.close()


# ------------------------------------------------------------------ what was stored before stays
def test_a_memory_built_before_these_readings_keeps_its_messages_and_a_re_ingest_adds_only_the_new(
        tmp_path, engine_factory):
    """The export as older loaders stored it: a voice message as its transcription plus "[image]", a
    recording without words as "[image]", a reply with its <think> block, a message without a time of its
    own undated. Read again today, the same file adds nothing but what is new and changes nothing stored."""
    conversation = _conversation("c1", [
        VOICE[0], VOICE[2],
        _node_message("assistant", [THINK], create_time=None),
        _node_message("user", ["A new message, added since."], create_time=1709460500.0)])
    path = _export(tmp_path, [conversation])
    [today] = as_memories(load_transcripts(path))
    assert [m.id for m in today.messages] == ["c1:1", "c1:3", "c1:4"], "a recording without words keeps its number"
    before = [Message(id="c1:1", namespace="conversations", speaker="user", text="I moved to Lyon last week.\n[image]",
                      time=datetime.utcfromtimestamp(1709460000.0), session_id="c1"),
              Message(id="c1:2", namespace="conversations", speaker="user", text="[image]",
                      time=datetime.utcfromtimestamp(1709460000.0), session_id="c1"),
              Message(id="c1:3", namespace="conversations", speaker="assistant", text=THINK, time=None,
                      session_id="c1")]
    engine = engine_factory(llm=_llm())
    engine.ingest(before, namespace="conversations")
    report = engine.ingest_transcript(today, namespace="conversations")
    assert report.messages == 1 and report.skipped == 2
    assert [m.text for m in engine.messages("conversations")][:3] == [m.text for m in before], "nothing stored changed"


def test_the_page_settles_a_chat_logs_date_order_and_includes_do_not_remember_only_when_asked(
        tmp_path, engine_factory):
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector

    engine = engine_factory(llm=_llm())
    tab = BuildTab(Inspector(engine))
    log = tmp_path / "chat.txt"
    log.write_text("[10/03/2024, 10:02] Ana: I adopted a beagle.\n[10/03/2024, 10:03] Ben: Lovely!\n",
                   encoding="utf-8")
    *_, (ns, source, summary, _fig, _rows) = list(tab.build(str(log), None, "ui-0123456789ab", None, None,
                                                            progress=lambda *a, **k: None))
    assert "choose the order under Chat-log dates" in summary and engine.namespaces() == []
    *_, (ns, source, summary, _fig, _rows) = list(tab.build(str(log), None, "ui-0123456789ab", None, None,
                                                            dates="chatlog-dmy", progress=lambda *a, **k: None))
    assert not source.failed, summary
    assert [m.time.month for m in engine.messages(ns)] == [3, 3]

    export = _export(tmp_path, [_conversation("c1", [_node_message("user", ["hi"])]),
                                _conversation("c2", [_node_message("user", ["private"])], is_do_not_remember=True)])
    for private, expected in ((False, ["hi"]), (True, ["hi", "private"])):
        *_, (ns, source, summary, _fig, _rows) = list(tab.build(
            str(export), None, f"ui-{'1' if private else '2'}23456789ab", None, None, private=private,
            progress=lambda *a, **k: None))
        assert sorted(m.text for m in engine.messages(ns)) == expected, summary
