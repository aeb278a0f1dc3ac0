"""Transcript loaders on the real dev files and on small malformed inputs."""

import json
from datetime import datetime

import pytest

from memsif.errors import TranscriptError
from memsif.io import load_transcripts
from memsif.timeparse import parse_time
from tests.conftest import EXAMPLE, LOCOMO_DEV, LONGMEMEVAL, requires_shared


@pytest.mark.parametrize("path", [EXAMPLE, pytest.param(LOCOMO_DEV, marks=requires_shared)])
def test_locomo_conv26_has_419_turns_in_19_sessions(path):
    [conv] = load_transcripts(path, sample="conv-26")
    assert conv.format == "locomo" and conv.sample_id == "conv-26"
    assert len(conv.messages) == 419
    assert len({m.session_id for m in conv.messages}) == 19
    first = conv.messages[0]
    assert first.id == "D1:1" and first.speaker == "Caroline"
    assert first.time == datetime(2023, 5, 8, 13, 56)
    assert [m.index for m in conv.messages] == list(range(419))
    assert all(m.namespace == "conv-26" for m in conv.messages)
    # image turns keep their caption
    assert any("[shares a photo:" in m.text for m in conv.messages)


@requires_shared
def test_locomo_file_has_three_samples_and_skips_empty_sessions():
    samples = load_transcripts(LOCOMO_DEV)
    assert [s.sample_id for s in samples] == ["conv-26", "conv-30", "conv-47"]
    raw = json.loads(LOCOMO_DEV.read_text())
    for item, tr in zip(raw, samples, strict=True):
        conv = item["conversation"]
        with_turns = [k for k in conv if k.startswith("session_") and not k.endswith("date_time") and conv[k]]
        assert len({m.session_id for m in tr.messages}) == len(with_turns)


@requires_shared
def test_longmemeval_dates_and_answer_turns():
    samples = load_transcripts(LONGMEMEVAL)
    assert samples and all(s.format == "longmemeval" for s in samples)
    first = samples[0]
    assert all(m.time is not None for m in first.messages)
    times = [m.time for m in first.messages]
    assert times == sorted(times)
    assert first.extra["has_answer_ids"]
    assert parse_time("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21)


@pytest.mark.parametrize(("text", "expected"), [
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
    ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21)),
    ("2023-05-20T02:21:00", datetime(2023, 5, 20, 2, 21)),
    ("2023-05-20T02:21:00+02:00", datetime(2023, 5, 20, 0, 21)),
    ("2023-05-20", datetime(2023, 5, 20)),
])
def test_parse_time_forms(text, expected):
    assert parse_time(text) == expected


def test_plain_text_with_date_headers(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text("## 8 May 2023\nAlice: I adopted a dog.\nBob: Nice!\n  What breed?\n\n"
                    "## 2023-06-01\nAlice: A beagle named Max.\n")
    [tr] = load_transcripts(path)
    assert [m.id for m in tr.messages] == ["D1:1", "D1:2", "D2:1"]
    assert tr.messages[1].text == "Nice!\nWhat breed?"
    assert tr.messages[2].time == datetime(2023, 6, 1)
    assert tr.messages[2].session_id == "session_2"


def test_jsonl(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text('{"speaker": "u", "text": "hi", "time": "2024-01-02T10:00:00"}\n'
                    '{"speaker": "a", "text": "hello"}\n')
    [tr] = load_transcripts(path)
    assert [m.speaker for m in tr.messages] == ["u", "a"]
    assert tr.messages[0].time == datetime(2024, 1, 2, 10)


@pytest.mark.parametrize(("name", "content", "where"), [
    ("bad.json", '[{"sample_id": "x", "conversation": {"session_1": [{"speaker": "A"}]}}]',
     "session_1 turn 0"),
    ("bad.json", '{"foo": 1}', "unknown JSON layout"),
    ("bad.json", '[{"sample_id": "x", "conversation": {}}, 7]', "item 1"),
    ("bad.json", '[{"sample_id": "x", "conversation": {"session_1_date_time": "not a date at all zz", '
                 '"session_1": [{"speaker": "A", "text": "hi"}]}}]', "session_1_date_time"),
    ("bad.json", "[{", "line 1"),
    ("bad.jsonl", '{"speaker": "a", "text": "ok"}\n{"speaker": "b"}\n', "line 2"),
    ("bad.txt", "no speaker here\n", "line 1"),
    ("empty.txt", "\n   \n", "no messages"),
    ("empty.json", "", "no messages"),
    ("blank.jsonl", '{"speaker": "a", "text": "   "}\n', "no non-blank turns"),
    ("empty-session.json", '[{"sample_id": "x", "conversation": {"speaker_a": "A", "session_1": []}}]',
     "no non-blank turns"),
])
def test_malformed_transcripts_name_file_and_position(tmp_path, name, content, where):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(TranscriptError) as info:
        load_transcripts(path)
    assert str(path) in str(info.value) and where in str(info.value)


def test_unknown_sample_is_an_error():
    with pytest.raises(TranscriptError, match="no sample 'conv-99'"):
        load_transcripts(EXAMPLE, sample="conv-99")
