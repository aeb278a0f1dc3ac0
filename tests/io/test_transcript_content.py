"""What a transcript's messages become, in every format and on every entry path: one speaker per
person however the name is written, only what a person or the assistant said, dates that cannot be
right kept and warned about, a Claude message's attachments kept as its text. Fixtures are made up.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from memsif.io import as_memories, load_transcripts
from memsif.records import Message
from tests.fakes import FakeLLM

ZWSP, ZWNJ, ZWJ, BOM, WJ, RLM, LRE, PDF, RLI, PDI = ("\u200b", "\u200c", "\u200d", "\ufeff", "\u2060", "\u200f",
                                                     "\u202a", "\u202c", "\u2067", "\u2069")
ZOE_NFC, ZOE_NFD = "Zo\u00eb", "Zoe\u0308"
#: Two people, each written several ways; "Ana" and "Zoë" (NFC) are their most frequent spellings.
SPELLINGS = ["Ana", "Ana", "ana", f"An{ZWSP}a", f"{BOM}Ana", f"{RLM}ANA{PDF}", ZOE_NFC, ZOE_NFC, ZOE_NFD,
             f"{ZWJ}zoë", f"{LRE}Zoë{PDF}", f"{RLI}Zoë{PDI}", f" Zoë{WJ} ", f"Zo{ZWNJ}ë"]


def _llm() -> FakeLLM:
    return FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5})


def write(tmp_path: Path, name: str, content: str) -> Path:
    p = tmp_path / name
    p.write_text(content, encoding="utf-8")
    return p


def _named(tmp_path: Path, fmt: str, names: list[str]) -> Path:
    """A transcript of ``fmt`` whose k-th message is said by ``names[k]``."""
    texts = [f"message {k + 1}" for k in range(len(names))]
    if fmt == "jsonl":
        return write(tmp_path, "c.jsonl", "\n".join(json.dumps({"speaker": n, "text": t}) for n, t in zip(
            names, texts, strict=True)))
    if fmt == "text":
        return write(tmp_path, "c.txt", "## 3 March 2024\n" + "".join(
            f"{n.strip()}: {t}\n" for n, t in zip(names, texts, strict=True)))
    if fmt == "locomo":
        turns = [{"speaker": n, "text": t, "dia_id": f"D1:{k + 1}"} for k, (n, t) in enumerate(zip(names, texts,
                                                                                                   strict=True))]
        return write(tmp_path, "c.json", json.dumps([{"sample_id": "s", "conversation": {
            "speaker_a": "Ana", "speaker_b": ZOE_NFD, "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns}}]))
    if fmt == "openai":
        return write(tmp_path, "c.json", json.dumps({"messages": [{"role": "user", "name": n, "content": t}
                                                                   for n, t in zip(names, texts, strict=True)]}))
    assert fmt == "claude"
    return write(tmp_path, "c.json", json.dumps([{"uuid": "c1", "chat_messages": [
        {"sender": n, "text": t, "created_at": "2024-05-02T09:00:00Z"} for n, t in zip(names, texts, strict=True)]}]))


# ------------------------------------------------------------------ class: one person, several speakers
@pytest.mark.parametrize("fmt", ["jsonl", "text", "locomo", "openai", "claude"])
def test_a_name_written_in_other_case_invisible_characters_or_unicode_form_is_one_speaker(tmp_path, fmt):
    [t] = load_transcripts(_named(tmp_path, fmt, SPELLINGS))
    assert [m.speaker for m in t.messages] == ["Ana"] * 6 + [ZOE_NFC] * 8, "two people, two speakers"
    [said] = [w for w in t.warnings if "one person" in w]
    for variant in ("'ana'", "'An\\u200ba'", "'\\u200fANA\\u202c'", "'Zoe\\u0308'", "'\\u200dzoë'"):
        assert variant in said, (variant, said)
    if fmt == "locomo":
        assert t.extra["speakers"] == ["Ana", ZOE_NFC]


def test_a_history_of_several_files_and_a_later_session_keep_one_spelling(tmp_path, engine_factory):
    """Across the conversations of one history, and between a memory and a transcript appended to it
    (CLI, MCP and the inspector ingest through ``ingest_transcript``): the stored spelling stays."""
    one = load_transcripts(_named(tmp_path, "claude", ["Ana", "Ana", "Bo"]))[0]
    two = load_transcripts(write(tmp_path, "d.json", json.dumps([{"uuid": "c2", "chat_messages": [
        {"sender": "ana", "text": "later", "created_at": "2024-06-02T09:00:00Z"}]}])))[0]
    [history] = as_memories([one, two])
    assert {m.speaker for m in history.messages} == {"Ana", "Bo"} and "'ana'" in history.warnings[-1]
    engine = engine_factory(llm=_llm())
    engine.ingest_transcript(load_transcripts(_named(tmp_path, "text", ["Ana", "Bo"]))[0], namespace="m")
    later = write(tmp_path, "later.txt", "## 4 March 2024\nANA: message 3\nbo: message 4\n")
    report = engine.ingest_transcript(load_transcripts(later)[0], namespace="m")
    assert [m.speaker for m in engine.messages("m")] == ["Ana", "Bo", "Ana", "Bo"]
    assert any("'ANA'" in w and "'bo'" in w for w in report.warnings)
    first = write(tmp_path, "first.jsonl", "\n".join(json.dumps({"id": f"j{k}", "speaker": n, "text": f"said {k}"})
                                                 for k, n in enumerate(["Ana", "Bo"])))
    engine.ingest_transcript(load_transcripts(first)[0], namespace="j")
    again = write(tmp_path, "again.jsonl", "\n".join(json.dumps({"id": f"j{k}", "speaker": n, "text": f"said {k}"})
                                                  for k, n in enumerate(["ANA", f"b{ZWSP}o"])))
    report = engine.ingest_transcript(load_transcripts(again)[0], namespace="j")  # the same messages, no conflict
    assert [m.speaker for m in engine.messages("j")] == ["Ana", "Bo"] and report.messages == 0


def test_the_python_api_stores_one_speaker_per_person(engine_factory):
    engine = engine_factory(llm=_llm())
    messages = [Message(id=f"m{k}", namespace="p", speaker=n, text=f"message {k}", time=datetime(2024, 3, 3))
                for k, n in enumerate(SPELLINGS)]
    report = engine.ingest(messages)
    assert {m.speaker for m in engine.messages("p")} == {"Ana", ZOE_NFC}
    assert any("one person" in w and "'ana'" in w for w in report.warnings)
    engine.ingest([Message(id="m99", namespace="p", speaker=f"zo{ZWSP}ë", text="later", time=datetime(2024, 3, 4))])
    assert engine.messages("p")[-1].speaker == ZOE_NFC, "a later call takes the spelling the memory holds"


# ------------------------------------------------------------- class: what is not conversation stays out
def _chatgpt(messages: list[dict]) -> str:
    mapping, parent = {}, None
    for k, m in enumerate(messages):
        mapping[f"n{k}"] = {"message": {"create_time": 1709460000.0 + k, **m}, "parent": parent,
                            "children": [f"n{k + 1}"] if k + 1 < len(messages) else []}
        parent = f"n{k}"
    return json.dumps([{"id": "c1", "title": "t", "current_node": parent, "mapping": mapping}])


def _part(text: str, content_type: str = "text") -> dict:
    return {"content_type": content_type, "parts": [text]}


ROLE_MESSAGES = [
    {"role": "system", "content": "You are helpful."},
    {"role": "developer", "content": "Answer in French."},
    {"role": "user", "content": "Weather in Lyon?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function", "function": {
        "name": "weather", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "1", "content": "{\"temp\": 21}"},
    {"role": "function", "name": "weather", "content": "21 degrees"},
    {"role": "assistant", "content": "Il fait 21 degrés."},
]
ROLES_LEFT_OUT = ("left out 5 messages that were not conversation: 1 system prompt, 1 developer prompt, "
                  "1 tool call, 1 tool result, 1 function result")
CHATGPT_TOOLS = [
    {"author": {"role": "system"}, "content": _part("You are ChatGPT.")},
    {"author": {"role": "user"}, "content": _part("Weather in Lyon?")},
    {"author": {"role": "assistant"}, "recipient": "browser", "content": _part("search('Lyon weather')")},
    {"author": {"role": "tool", "name": "browser"}, "content": _part("Lyon: 21 degrees")},
    {"author": {"role": "assistant"}, "recipient": "python", "content": {"content_type": "code", "text": "print(21)"}},
    {"author": {"role": "tool", "name": "python"}, "content": {"content_type": "execution_output", "text": "21"}},
    {"author": {"role": "assistant"}, "content": _part("Il fait 21 degrés.")},
]
CLAUDE_TOOLS = [
    {"sender": "human", "text": "Weather in Lyon?"},
    {"sender": "assistant", "text": "```\nThis block is not supported on your current device yet.\n```",
     "content": [{"type": "tool_use", "name": "weather", "input": {}}]},
    {"sender": "human", "text": "", "content": [{"type": "tool_result", "content": [{"type": "text", "text": "21"}]}]},
    {"sender": "assistant", "text": "Il fait 21 degrés."},
]
LONGMEMEVAL_SYSTEM = [{"question_id": "q", "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20 (Sat) 02:21"],
                       "haystack_sessions": [[{"role": "system", "content": "You are helpful."},
                                              {"role": "user", "content": "Weather in Lyon?"},
                                              {"role": "assistant", "content": "Il fait 21 degrés."}]]}]
LOCOMO_ROLES = [{"sample_id": "s", "conversation": {
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [{"speaker": "System", "text": "You are helpful.", "dia_id": "D1:1"},
                  {"speaker": "Ana", "text": "Weather in Lyon?", "dia_id": "D1:2"},
                  {"speaker": "tool", "text": "21 degrees", "dia_id": "D1:3"},
                  {"speaker": "Bo", "text": "Il fait 21 degrés.", "dia_id": "D1:4"}]}}]
#: format → (file name, content, the warning)
NOT_CONVERSATION = {
    "locomo": ("c.json", json.dumps(LOCOMO_ROLES),
               "left out 2 messages that were not conversation: 1 system prompt, 1 tool result"),
    "openai": ("c.json", json.dumps({"messages": ROLE_MESSAGES}), ROLES_LEFT_OUT),
    "jsonl": ("c.jsonl", "\n".join(json.dumps(m) for m in ROLE_MESSAGES), ROLES_LEFT_OUT),
    "chatgpt": ("c.json", _chatgpt(CHATGPT_TOOLS),
                "left out 5 messages that were not conversation: 1 system prompt, 2 tool calls, 2 tool results"),
    "claude": ("c.json", json.dumps([{"uuid": "c1", "chat_messages": CLAUDE_TOOLS}]),
               "left out 2 messages that were not conversation: 1 tool call, 1 tool result"),
    "text": ("c.txt", "## 3 March 2024\nSystem: You are helpful.\n  Always answer in French.\n"
                      "user: Weather in Lyon?\nTool: 21 degrees\nassistant: Il fait 21 degrés.\n",
             "left out 2 messages that were not conversation: 1 system prompt, 1 tool result"),
    "longmemeval": ("c.json", json.dumps(LONGMEMEVAL_SYSTEM),
                    "left out 1 message that was not conversation: 1 system prompt"),
}


@pytest.mark.parametrize("fmt", sorted(NOT_CONVERSATION))
def test_prompts_tool_calls_and_tool_output_are_left_out_and_counted(tmp_path, fmt):
    name, content, said = NOT_CONVERSATION[fmt]
    [t] = load_transcripts(write(tmp_path, name, content))
    assert [m.text for m in t.messages] == ["Weather in Lyon?", "Il fait 21 degrés."], "only what was said"
    assert said in t.warnings, t.warnings


# --------------------------------------------------------------------- class: dates that cannot be right
IMPLAUSIBLE = {
    "jsonl": ("c.jsonl", "\n".join(json.dumps({"speaker": "Ana", "text": f"m{k}", "time": w, "id": f"m{k}"})
                                   for k, w in enumerate([0, "2024-03-03T10:00:00", "2203-03-03T10:00:00"])),
              ["m0", "m2"]),
    "text": ("c.txt", "## 3 March 2203\nAna: typo year\n## 3 March 2024\nAna: fine\n", ["D1:1"]),
    "locomo": ("c.json", json.dumps([{"sample_id": "s", "conversation": {
        "session_1_date_time": "1:56 pm on 8 May, 1970", "session_1": [{"speaker": "A", "text": "hi"}],
        "session_2_date_time": "1:56 pm on 8 May, 2023", "session_2": [{"speaker": "A", "text": "yo"}]}}]),
               ["D1:1"]),
    "longmemeval": ("c.json", json.dumps([{"question_id": "q", "haystack_session_ids": ["s1", "s2"],
                                           "haystack_dates": ["2023/05/20 (Sat) 02:21", "2203/05/20 (Sat) 02:21"],
                                           "haystack_sessions": [[{"role": "user", "content": "ok"}],
                                                                 [{"role": "user", "content": "typo"}]]}]),
                    ["s2:1"]),
    "chatgpt": ("c.json", _chatgpt([{"author": {"role": "user"}, "content": _part("ok")},
                                    {"author": {"role": "user"}, "content": _part("typo"),
                                     "create_time": 7300000000.0}]), ["c1:2"]),
    "claude": ("c.json", json.dumps([{"uuid": "c1", "chat_messages": [
        {"sender": "human", "text": "epoch", "created_at": "1970-01-01T00:00:00Z"},
        {"sender": "human", "text": "ok", "created_at": "2024-05-02T09:00:00Z"}]}]), ["c1:1"]),
}


@pytest.mark.parametrize("fmt", sorted(IMPLAUSIBLE))
def test_a_date_before_1990_or_after_the_load_day_is_kept_and_warned_about_with_its_message(tmp_path, fmt):
    name, content, ids = IMPLAUSIBLE[fmt]
    [t] = load_transcripts(write(tmp_path, name, content))
    [said] = [w for w in t.warnings if "cannot be right" in w]
    assert said.startswith(f"{len(ids)} message") and all(f"{i} (" in said for i in ids), said
    kept = {m.id: m.time for m in t.messages}
    assert all(kept[i] is not None and (kept[i].year < 1990 or kept[i].year > 2100) for i in ids), "dates are kept"


def test_many_implausible_dates_name_a_few_and_count_the_rest(tmp_path):
    lines = [{"speaker": "Ana", "text": f"m{k}", "time": 0, "id": f"m{k}"} for k in range(8)]
    [t] = load_transcripts(write(tmp_path, "c.jsonl", "\n".join(json.dumps(x) for x in lines)))
    [said] = [w for w in t.warnings if "cannot be right" in w]
    assert said.startswith("8 messages") and "m4 (1970-01-01)" in said and "m5 (" not in said and "3 more" in said


def test_the_python_api_warns_about_implausible_dates_once_per_path(engine_factory, tmp_path):
    engine = engine_factory(llm=_llm())
    messages = [Message(id="a", namespace="p", speaker="Ana", text="epoch", time=datetime(1970, 1, 1)),
                Message(id="b", namespace="p", speaker="Ana", text="typo", time=datetime(2203, 3, 3)),
                Message(id="c", namespace="p", speaker="Ana", text="ok", time=datetime(2024, 3, 3))]
    report = engine.ingest(messages)
    [said] = [w for w in report.warnings if "cannot be right" in w]
    assert said.startswith("2 messages") and "a (1970-01-01)" in said and "b (2203-03-03)" in said
    assert [m.time for m in engine.messages("p")] == [m.time for m in messages], "nothing is lost"
    [t] = load_transcripts(write(tmp_path, "c.txt", "## 3 March 2203\nAna: typo year\n"))
    report = engine.ingest_transcript(t, namespace="q")
    assert any("cannot be right" in w for w in t.warnings)
    assert not any("cannot be right" in w for w in report.warnings), "the load said it already"


def test_the_inspectors_message_tables_mark_an_implausible_date():
    from memsif.viz import message_rows

    rows = message_rows(["a", "b"], [
        Message(id="a", namespace="p", speaker="Ana", text="typo", time=datetime(2203, 3, 3, 10, 0)),
        Message(id="b", namespace="p", speaker="Ana", text="ok", time=datetime(2024, 3, 3, 10, 0))])
    assert rows[0][2].startswith("2203-03-03 10:00") and "cannot be right" in rows[0][2]
    assert rows[1][2] == "2024-03-03 10:00"


# ----------------------------------------------------------------------- class: Claude attachments
def test_a_claude_messages_attachments_are_kept_as_its_text(tmp_path):
    conv = [{"uuid": "c1", "chat_messages": [
        {"sender": "human", "text": "Here are my notes.", "created_at": "2024-05-02T09:00:00Z",
         "attachments": [{"file_name": "notes.txt", "file_type": "txt",
                          "extracted_content": "Plant tomatoes in May."}]},
        {"sender": "human", "text": "", "created_at": "2024-05-02T09:01:00Z",
         "attachments": [{"file_name": "plan.md", "extracted_content": "Stake them in June."}], "files": []},
        {"sender": "human", "text": "", "created_at": "2024-05-02T09:02:00Z",
         "attachments": [], "files": [{"file_name": "garden.jpg"}]},
        {"sender": "assistant", "text": "Noted.", "created_at": "2024-05-02T09:03:00Z", "attachments": None}]}]
    [t] = load_transcripts(write(tmp_path, "c.json", json.dumps(conv)))
    assert [m.text for m in t.messages] == [
        "Here are my notes.\n\n[attachment: notes.txt]\nPlant tomatoes in May.",
        "[attachment: plan.md]\nStake them in June.", "[attachment: garden.jpg]", "Noted."]
    assert any(w.startswith("1 attachment has no extracted text (garden.jpg)") for w in t.warnings), t.warnings
