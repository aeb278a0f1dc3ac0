"""A person's history as one memory: several conversations of an export, sessions appended over time
(files, MCP calls), re-exports with corrections. One test per class of source (``memsif.io.placement``)."""

import json
from datetime import datetime

import pytest

from memsif.cli import main
from memsif.errors import SourceConflict
from memsif.io import as_memories, load_transcripts
from memsif.io.placement import place
from memsif.records import Message
from tests import DATA
from tests.fakes import FakeLLM

FORMATS_DIR = DATA / "formats"
EXPORT = FORMATS_DIR / "chatgpt-three-conversations.json"


def _text(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    (t,) = load_transcripts(path)
    return t


def _msg(mid, text, session="s1", speaker="Ana", time=None):
    return Message(id=mid, namespace="n", speaker=speaker, text=text, time=time, session_id=session)


# ------------------------------------------------------------------- class: multi-conversation exports
def test_an_export_of_three_conversations_is_one_history_in_the_order_they_happened():
    loaded = load_transcripts(EXPORT)
    assert [t.title for t in loaded] == ["Moving to Lyon", "Garden plans", "Rent went up"]
    (history,) = as_memories(loaded)
    assert history.sample_id == "chatgpt-three-conversations" and not history.source_ids
    assert [s["title"] for s in history.extra["sessions"]] == ["Garden plans", "Moving to Lyon", "Rent went up"]
    ids = [m.id for m in history.messages]
    assert len(set(ids)) == len(ids) == 8, "every conversation numbers its turns from 1: ids are keyed by conversation"
    assert ids[0] == "3f9b2d10:1" and ids[2] == "7c1e9a42:1"
    assert [m.index for m in history.messages] == list(range(8))
    times = [m.time for m in history.messages]
    assert times == sorted(times)


def test_a_claude_export_with_several_conversations_is_one_history_too(tmp_path):
    convs = [{"uuid": f"{k}0000000-aaaa", "name": f"chat {k}", "chat_messages": [
        {"sender": "human", "text": f"hello {k}", "created_at": f"2024-0{k}-01T10:00:00Z"},
        {"sender": "assistant", "text": f"hi {k}", "created_at": f"2024-0{k}-01T10:01:00Z"}]} for k in (3, 1, 2)]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(convs))
    (history,) = as_memories(load_transcripts(path))
    assert [m.text for m in history.messages] == ["hello 1", "hi 1", "hello 2", "hi 2", "hello 3", "hi 3"]
    assert len({m.id for m in history.messages}) == 6


def test_the_cli_builds_an_export_into_one_namespace_and_reads_it_again_without_change(tmp_path, capsys):
    data = str(tmp_path / "d")
    args = ["ingest", str(EXPORT), "--data-dir", data, "--no-facts", "--no-progress", "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert first["namespace"] == "chatgpt-three-conversations" and first["messages"] == 8
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again["messages"] == 0 and again["skipped"] == 8


# ----------------------------------------------------------- class: sessions appended over time
def test_a_second_plain_text_session_that_restarts_at_d1_1_is_appended_and_a_retry_adds_nothing(tmp_path):
    first = _text(tmp_path, "one.txt", "## 3 March 2024\nAlice: I moved to Lyon.\nBob: Nice!\n")
    second = _text(tmp_path, "two.txt", "## 10 March 2024\nAlice: My rent went up to 1,500 euros.\n")
    stored = place(first.messages, []).messages
    placed = place(second.messages, stored, second.source_ids)
    assert not placed.differences
    assert [(m.id, m.session_id) for m in placed.messages] == [("D2:1", "session_2")]
    assert placed.renumbered == {"D1:1": "D2:1"} and "restarts the numbering" in placed.notes[0]
    retry = place(second.messages, stored + placed.messages, second.source_ids)
    assert [m.id for m in retry.messages] == ["D2:1"] and not retry.notes, "a retry maps onto the stored session"


def test_a_second_openai_list_is_numbered_after_the_first():
    stored = [_msg("M1", "My cat is Miso.", "1"), _msg("M2", "Lovely.", "1")]
    given = [_msg("M1", "Miso turned four.", "1"), _msg("M2", "Happy birthday, Miso!", "1")]
    placed = place(given, stored, source_ids=False)
    assert [(m.id, m.session_id) for m in placed.messages] == [("M3", "2"), ("M4", "2")]


def test_an_export_downloaded_again_with_more_messages_adds_only_the_new_ones():
    stored = [_msg(f"7c1e9a42:{k}", f"turn {k}", "conv") for k in (1, 2, 3)]
    given = [*stored, _msg("7c1e9a42:4", "turn 4", "conv")]
    placed = place(given, stored, source_ids=False)
    assert [m.id for m in placed.messages] == [m.id for m in given] and not placed.differences


def test_an_export_stored_with_an_older_versions_ids_is_recognised_by_its_content():
    stored = [_msg(f"M{k}", f"turn {k}", "conv") for k in (1, 2)]  # ids before conversation keys
    given = [_msg(f"7c1e9a42:{k}", f"turn {k}", "conv") for k in (1, 2, 3)]
    placed = place(given, stored, source_ids=False)
    assert [m.id for m in placed.messages] == ["M1", "M2", "M3"]


# ------------------------------------------------------------- class: corrected re-exports
@pytest.mark.parametrize("field, edit, changed", [
    ("time", "## 4 March 2024\nAlice: I moved to Lyon.\nBob: Nice!\nAlice: The flat is small.\n", 3),
    ("speaker", "## 3 March 2024\nAlicia: I moved to Lyon.\nBob: Nice!\nAlice: The flat is small.\n", 1),
    ("text", "## 3 March 2024\nAlice: I moved to Lyon!\nBob: Nice!\nAlice: The flat is small.\n", 1),
])
def test_an_edited_re_export_is_a_difference_never_silently_skipped(tmp_path, field, edit, changed):
    original = _text(tmp_path, "a.txt", "## 3 March 2024\nAlice: I moved to Lyon.\nBob: Nice!\n"
                                        "Alice: The flat is small.\n")
    edited = _text(tmp_path, "b.txt", edit)
    placed = place(edited.messages, original.messages, edited.source_ids)
    assert [(d.message_id, d.field) for d in placed.differences] == [(f"D1:{k}", field) for k in range(1, changed + 1)]


def test_file_ids_with_other_content_are_differences():
    stored = [_msg("D1:1", "I moved to Lyon.", time=datetime(2024, 3, 3))]
    given = [_msg("D1:1", "I moved to Lyon.", time=datetime(2024, 3, 4))]
    (diff,) = place(given, stored, source_ids=True).differences
    assert diff.field == "time" and "2024-03-03" in diff.describe() and "2024-03-04" in diff.describe()


def test_the_engine_refuses_a_corrected_source_with_what_differs_then_replaces_it(engine_factory, tmp_path):
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.6, "trajectory_judge": 0.5}))
    original = _text(tmp_path, "a.txt", "## 3 March 2024\nAlice: I moved to Lyon.\nBob: Nice!\n")
    engine.ingest_transcript(original, "alice")
    edited = _text(tmp_path, "a2.txt", "## 4 March 2024\nAlice: I moved to Lyon.\nBob: Nice!\nAlice: Big flat.\n")
    with pytest.raises(SourceConflict) as info:
        engine.ingest_transcript(edited, "alice")
    said = str(info.value)
    assert "D1:1 time" in said and "replace" in said and "Nothing was written" in said
    assert [m.time for m in engine.messages("alice")] == [datetime(2024, 3, 3)] * 2, "nothing stored is lost"
    report = engine.ingest_transcript(edited, "alice", replace=True)
    assert [m.time for m in engine.messages("alice")] == [datetime(2024, 3, 4)] * 3
    assert any("replaced 2 stored message(s)" in w for w in report.warnings)
    reasons = [op.reason for op in engine.fact_log("alice")]
    assert any(r.startswith("source replaced: replaced 2 stored message(s)") for r in reasons), "not in the log"
    assert engine.segments("alice"), "the memory is rebuilt from the corrected history"


def test_the_python_api_refuses_a_speaker_or_time_change_under_a_stored_id(engine_factory):
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.6, "trajectory_judge": 0.5}))
    engine.ingest([_msg("D1:1", "I moved to Lyon.", time=datetime(2024, 3, 3))], "n")
    with pytest.raises(SourceConflict, match="D1:1 speaker"):
        engine.ingest([_msg("D1:1", "I moved to Lyon.", speaker="Alicia", time=datetime(2024, 3, 3))], "n")
