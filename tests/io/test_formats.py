"""Transcripts in: every format loads, or is refused with a reason that says what to fix.

One test per fault class (encodings, binary files, invalid Unicode, wrong field types, plain-text
layout, id collisions, format detection) and per new format (ChatGPT and Claude exports, OpenAI
message lists); fixtures are made up.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path

import pytest

from memsif.errors import TranscriptError
from memsif.io import load_transcripts
from memsif.io.transcripts import FORMATS
from tests import DATA
from tests.conftest import EXAMPLE, LONGMEMEVAL

FORMATS_DIR = DATA / "formats"
TEXT = "## 3 March 2024\nAna: I planted tomatoes.\nBen: Which kind?\nAna: San Marzano, for sauce.\n"


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return p


# --------------------------------------------------------------------------------------- encodings
@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_byte_order_marks_and_utf16_32_text_load_with_clean_speaker_names(tmp_path, encoding):
    data = TEXT.encode(encoding)
    if encoding in ("utf-16-le", "utf-16-be"):  # no byte-order mark: detected
        data = ("\ufeff" + TEXT).encode(encoding)
    [t] = load_transcripts(write(tmp_path, "chat.txt", data))
    assert [m.speaker for m in t.messages] == ["Ana", "Ben", "Ana"]
    assert t.messages[2].text == "San Marzano, for sauce." and t.messages[0].time == datetime(2024, 3, 3)


def test_utf16_without_a_byte_order_mark_is_detected_and_warned(tmp_path):
    [t] = load_transcripts(write(tmp_path, "chat.txt", (TEXT * 3).encode("utf-16-le")))
    assert t.messages[0].speaker == "Ana" and any("not UTF-8" in w for w in t.warnings)


def test_a_legacy_encoding_is_detected_with_a_warning(tmp_path):
    text = "## 3 March 2024\nZoë: Le café était crème brûlée, très bien.\nRené: Merci beaucoup, à bientôt!\n"
    [t] = load_transcripts(write(tmp_path, "chat.txt", (text * 4).encode("cp1252")))
    assert "café" in t.messages[0].text and any("not UTF-8" in w for w in t.warnings)


@pytest.mark.parametrize(("name", "content"), [
    ("chat.json", json.dumps({"messages": [{"role": "user", "content": "hi there"}]})),
    ("chat.jsonl", '{"speaker": "Ana", "text": "hi there", "time": "2024-03-03"}\n'),
])
def test_bom_prefixed_json_and_jsonl_load(tmp_path, name, content):
    [t] = load_transcripts(write(tmp_path, name, content.encode("utf-8-sig")))
    assert t.messages[0].text == "hi there" and not t.messages[0].speaker.startswith("\ufeff")


@pytest.mark.parametrize(("data", "looks_like"), [
    (b"\x89PNG\r\n\x1a\n" + bytes(64), "Portable Network Graphics"),
    (b"PK\x03\x04" + bytes(64), "ZIP archive"),
    (b"%PDF-1.7\n" + bytes(64), "Portable Document Format"),
    (b"\x1f\x8b\x08\x00" + bytes(64), "GZIP"),
    (bytes(range(256)) * 4, "a binary file"),
])
def test_a_binary_file_is_not_a_text_transcript(tmp_path, data, looks_like):
    with pytest.raises(TranscriptError, match="not a text transcript") as info:
        load_transcripts(write(tmp_path, "photo.json", data))
    assert looks_like in str(info.value) and "photo.json" in str(info.value)


@pytest.mark.parametrize(("name", "content"), [
    ("chat.jsonl", '{"speaker": "Ana", "text": "half an emoji \\ud83d here"}\n'),
    ("chat.json", json.dumps([{"role": "user", "content": "x"}]).replace(
        '"x"', '"pair \\ud83d\\ude00 and lone \\udc00"')),
])
def test_lone_surrogates_are_repaired_at_load_with_a_warning(tmp_path, name, content):
    [t] = load_transcripts(write(tmp_path, name, content))
    text = t.messages[0].text
    text.encode("utf-8")  # valid Unicode now: no tokenizer or store will choke on it
    assert "\ufffd" in text and any("not valid Unicode" in w for w in t.warnings)
    if "pair" in text:
        assert "😀" in text


def test_a_lone_surrogate_reaches_no_model_or_store(tmp_path, engine_factory):
    [t] = load_transcripts(write(tmp_path, "chat.jsonl", '{"speaker": "Ana", "text": "half \\ud83d emoji"}\n'))
    engine = engine_factory()
    report = engine.ingest(t.messages, namespace="t")
    assert report.messages == 1 and engine.messages("t")[0].text == "half \ufffd emoji"


# ------------------------------------------------------------------------------ wrong field types
@pytest.mark.parametrize(("name", "content", "says"), [
    ("chat.jsonl", '{"speaker": "Ana", "text": ["a", "list", "of", "words"]}\n',
     "line 1: field 'text' is a list of str, expected a string"),
    ("chat.jsonl", '{"speaker": {"name": "Ana"}, "text": "hi"}\n',
     "line 1: field 'speaker' is an object, expected a string"),
    ("chat.jsonl", '{"speaker": "Ana", "text": 42}\n', "field 'text' is a number, expected a string"),
    ("lme.json", json.dumps([{"question_id": "q1", "haystack_sessions": [[{"role": "user", "content": ["a", "b"]}]]}]),
     "field 'haystack_sessions.0.0.content' is a list of str, expected a string"),
    ("lme.json", json.dumps([{"question_id": "q1", "haystack_sessions": [[{"role": {"x": 1}, "content": "hi"}]]}]),
     "field 'haystack_sessions.0.0.role' is an object, expected a string"),
    ("loco.json", json.dumps([{"sample_id": "s", "conversation": {"session_1": [{"speaker": "A", "text": 7}]}}]),
     "session_1 turn 0: field 'text' is a number, expected a string"),
    ("open.json", json.dumps([{"role": "user", "content": {"text": "hi"}}]),
     "message 0: field 'content' is an object, expected a string"),
])
def test_a_field_of_the_wrong_type_names_field_found_and_expected(tmp_path, name, content, says):
    with pytest.raises(TranscriptError) as info:
        load_transcripts(write(tmp_path, name, content))
    assert says in str(info.value) and name in str(info.value)


def test_content_parts_are_read_as_their_text(tmp_path):
    lines = [{"role": "user", "content": [{"type": "text", "text": "My cat is Miso."},
                                          {"type": "image_url", "image_url": {"url": "u"}}]},
             {"speaker": "Ben", "text": [{"type": "text", "text": "Cute!"}]}]
    [t] = load_transcripts(write(tmp_path, "chat.jsonl", "\n".join(json.dumps(x) for x in lines)))
    assert [(m.speaker, m.text) for m in t.messages] == [("user", "My cat is Miso."), ("Ben", "Cute!")]
    lme = [{"question_id": "q", "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
            "haystack_sessions": [[{"role": "user", "content": [{"type": "text", "text": "I moved to Lyon."}]}]]}]
    [t] = load_transcripts(write(tmp_path, "lme.json", json.dumps(lme)))
    assert t.messages[0].text == "I moved to Lyon."


# -------------------------------------------------------------------------------------- plain text
def test_indented_lines_continue_a_message_whatever_they_look_like(tmp_path):
    text = ("## 3 March 2024\nAna: here is my config:\n    host: example.org\n    port: 8080\n"
            "  ## Step 2\n  restart it\nBen: done\n")
    [t] = load_transcripts(write(tmp_path, "chat.txt", text))
    assert [m.speaker for m in t.messages] == ["Ana", "Ben"]
    assert t.messages[0].text == "here is my config:\nhost: example.org\nport: 8080\n## Step 2\nrestart it"
    assert {m.session_id for m in t.messages} == {"session_1"}


def test_a_heading_with_text_around_its_date_is_a_dated_session(tmp_path):
    text = ("## Session 1 — 3 March 2024\nAna: rent is 1,200\n"
            "## Session 2 - 10 September 2024, evening\nAna: 1,500 now\n")
    [t] = load_transcripts(write(tmp_path, "chat.txt", text))
    assert [m.time for m in t.messages] == [datetime(2024, 3, 3), datetime(2024, 9, 10)]
    assert [m.session_id for m in t.messages] == ["session_1", "session_2"] and not t.warnings


def test_an_undated_header_keeps_no_date_and_warns(tmp_path):
    [t] = load_transcripts(write(tmp_path, "chat.txt", "## Step 2\nAna: hello\n# Notes\nBen: hi\n"))
    assert [m.time for m in t.messages] == [None, None]
    assert len(t.warnings) == 2 and "holds no date" in t.warnings[0] and "line 1" in t.warnings[0]


def test_no_loaded_message_anywhere_gets_todays_date(tmp_path):
    """Every format, with undated and partly dated inputs: a date comes from the file or not at all."""
    today = date.today()
    files = [write(tmp_path, "a.txt", "## Step 2\nAna: hi\n## Friday\nBen: yo\n## May 2023\nAna: ok\n"),
             write(tmp_path, "b.jsonl", '{"speaker": "A", "text": "hi"}\n{"speaker": "B", "text": "yo", "time": ""}\n'),
             write(tmp_path, "c.json", json.dumps([{"role": "user", "content": "hi"}])),
             EXAMPLE, *sorted(FORMATS_DIR.glob("*.json"))]
    files += [LONGMEMEVAL] if LONGMEMEVAL.exists() else []  # ../shared lies beside the checkout, not a copy
    for f in files:
        for t in load_transcripts(f):
            for m in t.messages:
                assert m.time is None or m.time.date() != today, (f.name, m.id, m.time)
    [t] = load_transcripts(files[0])
    assert [m.time for m in t.messages] == [None, None, datetime(2023, 5, 1)]


def test_text_before_any_speaker_line_is_refused_with_its_line(tmp_path):
    with pytest.raises(TranscriptError, match="line 2: expected 'Speaker: text'"):
        load_transcripts(write(tmp_path, "chat.txt", "## 3 March 2024\n   indented first\nAna: hi\n"))


# ---------------------------------------------------------------------------------- id collisions
def _lme(sessions, ids, dates):
    return json.dumps([{"question_id": "q1", "question": "Where does Ana live now?", "answer": "Porto",
                        "haystack_sessions": sessions, "haystack_session_ids": ids, "haystack_dates": dates}])


def test_a_repeated_session_id_with_new_content_is_kept_with_a_unique_id(tmp_path):
    first = [{"role": "user", "content": "I live in Lyon."}]
    later = [{"role": "user", "content": "I moved to Porto last week."}]
    text = _lme([first, later], ["s1", "s1"], ["2023/05/20 (Sat) 02:21", "2023/09/02 (Sat) 10:00"])
    [t] = load_transcripts(write(tmp_path, "lme.json", text))
    assert [m.id for m in t.messages] == ["s1:1", "s1#2:1"] and "Porto" in t.messages[1].text
    assert any("session id s1 is used twice with different turns" in w for w in t.warnings)


def test_a_repeated_identical_session_is_stored_once(tmp_path):
    same = [{"role": "user", "content": "I live in Lyon."}]
    text = _lme([same, same], ["s1", "s1"], ["2023/05/20 (Sat) 02:21"] * 2)
    [t] = load_transcripts(write(tmp_path, "lme.json", text))
    assert [m.id for m in t.messages] == ["s1:1"] and any("stored once" in w for w in t.warnings)


@pytest.mark.parametrize(("name", "content", "ids"), [
    ("chat.jsonl", '{"id": "m1", "speaker": "A", "text": "one"}\n{"id": "m1", "speaker": "A", "text": "two"}\n'
                   '{"id": "m1", "speaker": "A", "text": "one"}\n', ["m1", "m1#2"]),
    ("loco.json", json.dumps([{"sample_id": "s", "conversation": {
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "one"},
                      {"speaker": "B", "dia_id": "D1:1", "text": "two"}],
        "session_1_date_time": "1:56 pm on 8 May, 2023"}}]), ["D1:1", "D1:1#2"]),
])
def test_repeated_message_ids_are_made_unique_or_merged_with_warnings(tmp_path, name, content, ids):
    [t] = load_transcripts(write(tmp_path, name, content))
    assert [m.id for m in t.messages] == ids and t.warnings


def test_repeated_sample_ids_in_one_file_are_kept_apart(tmp_path):
    conv = {"session_1": [{"speaker": "A", "text": "one"}], "session_1_date_time": "1:56 pm on 8 May, 2023"}
    other = {"session_1": [{"speaker": "A", "text": "two"}], "session_1_date_time": "1:56 pm on 8 May, 2023"}
    samples = [{"sample_id": "s", "conversation": conv}, {"sample_id": "s", "conversation": other},
               {"sample_id": "s", "conversation": conv}]
    found = load_transcripts(write(tmp_path, "loco.json", json.dumps(samples)))
    assert [t.sample_id for t in found] == ["s", "s#2"] and found[1].messages[0].namespace == "s#2"


def test_the_cli_ingests_a_repeated_session_instead_of_calling_it_already_stored(tmp_path):
    from memsif.cli import main

    first = [{"role": "user", "content": "I live in Lyon."}]
    later = [{"role": "user", "content": "I moved to Porto last week."}]
    path = write(tmp_path, "lme.json", _lme([first, later], ["s1", "s1"], ["2023/05/20 (Sat) 02:21",
                                                                          "2023/09/02 (Sat) 10:00"]))
    assert main(["ingest", str(path), "--data-dir", str(tmp_path / "d"), "--no-facts", "--no-progress",
                 "--json"]) == 0


# ------------------------------------------------------------------------------------ new formats
def test_a_chatgpt_export_follows_the_current_branch_with_roles_and_times():
    [t] = load_transcripts(FORMATS_DIR / "chatgpt-conversations.json")
    assert t.format == "chatgpt" and t.sample_id == "conv-trip" and t.extra["title"] == "Trip planning"
    assert [(m.speaker, m.text) for m in t.messages] == [
        ("user", "I'm flying to Lisbon on 14 March."), ("assistant", "Lisbon in March is lovely. Where will you stay?"),
        ("user", "In Alfama, near the castle.")]
    assert t.messages[0].time == datetime(2024, 3, 3, 10, 0)
    assert t.warnings == ["left out 1 message that was not conversation: 1 system prompt"]


def test_a_claude_export_reads_text_and_content_parts_with_utc_times():
    [t] = load_transcripts(FORMATS_DIR / "claude-conversations.json")
    assert t.format == "claude" and t.sample_id == "c-garden"
    assert [m.speaker for m in t.messages] == ["human", "assistant", "human"]
    assert t.messages[1].text == "Great choice for sauce!" and t.messages[2].time == datetime(2024, 5, 9, 16, 30)


def test_an_openai_message_list_drops_the_system_prompt_and_reads_parts():
    [t] = load_transcripts(FORMATS_DIR / "openai-messages.json")
    assert t.format == "openai" and [(m.speaker, m.text) for m in t.messages] == [
        ("user", "My cat Miso is 3 years old."), ("assistant", "Miso sounds lovely.")]
    assert all(m.time is None for m in t.messages) and any("undated" in w for w in t.warnings)


# ------------------------------------------------------------------------------------- detection
def test_a_detection_failure_lists_what_was_tried(tmp_path):
    with pytest.raises(TranscriptError) as info:
        load_transcripts(write(tmp_path, "odd.json", json.dumps({"chats": [], "owner": "me"})))
    said = str(info.value)
    for tried in ("LoCoMo", "LongMemEval", "ChatGPT export", "Claude export", "OpenAI messages", "chats, owner",
                  "--format"):
        assert tried in said


def test_locomo_with_misspelled_session_keys_names_the_keys_it_found(tmp_path):
    conv = {"Session 1": [{"speaker": "A", "text": "hi"}], "speaker_a": "A"}
    with pytest.raises(TranscriptError, match=r"no 'session_<n>' lists \(its keys: Session 1, speaker_a\)"):
        load_transcripts(write(tmp_path, "loco.json", json.dumps([{"sample_id": "s", "conversation": conv}])))


def test_format_can_be_forced_and_an_unknown_one_is_refused(tmp_path):
    path = write(tmp_path, "export.txt", '{"speaker": "Ana", "text": "hi"}\n{"speaker": "Ben", "text": "yo"}\n')
    [t] = load_transcripts(path)  # one JSON object per line: detected as JSONL despite the name
    assert t.format == "jsonl"
    [t] = load_transcripts(path, format="text")
    assert t.format == "text" and t.messages[0].speaker == '{"speaker"'
    with pytest.raises(TranscriptError, match="unknown format 'csv'"):
        load_transcripts(path, format="csv")
    assert set(FORMATS) == {"locomo", "longmemeval", "chatgpt", "claude", "openai", "telegram", "discord", "messenger",
                            "slack", "jsonl", "chatlog", "chatlog-dmy",
                            "chatlog-mdy", "text"}
