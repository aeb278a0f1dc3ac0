"""The Mem0 side-by-side script (``benchmarks/peers/mem0_side_by_side.py``) reads Mem0's own output:
checked on a recorded small run (six adds and two searches of conv-26 with Mem0 2.2.1 on the packaged
1.5B through llama.cpp's server, ``tests/data/mem0-raw/``), with no model and no Mem0 installed."""

import importlib.util
import json
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "data" / "mem0-raw"


@pytest.fixture(scope="module")
def peer():
    spec = importlib.util.spec_from_file_location("mem0_side_by_side",
                                                  ROOT / "benchmarks" / "peers" / "mem0_side_by_side.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def recorded():
    return (json.loads((RECORDED / "mem0-raw.json").read_text()),
            json.loads((RECORDED / "parsed.json").read_text()))


def test_the_recorded_adds_searches_and_memories_parse_as_they_did_when_recorded(peer, recorded):
    raw, parsed = recorded
    assert [asdict(peer.parse_add(r)) for r in raw["adds"]] == parsed["adds"]
    assert {s["qid"]: [asdict(h) for h in peer.parse_hits(s["result"])] for s in raw["searches"]} == \
        parsed["searches"]
    assert {k: [asdict(h) for h in peer.parse_hits(v)] for k, v in raw["stored"].items()} == parsed["stored"]


def test_each_add_is_one_call_of_mem0s_long_prompt_and_its_status_follows_its_reply(peer, recorded):
    raw, _ = recorded
    rows = [peer.parse_add(r) for r in raw["adds"]]
    assert len(rows) == 6 and {r.status for r in rows} <= {"stored", "nothing", "duplicate", "dropped", "failed"}
    for add, row in zip(raw["adds"], rows, strict=True):
        assert row.llm_calls == 1 and row.prompt_tokens > 7000, "Mem0's extraction prompt is ~8,000 tokens"
        assert set(row.events) <= {"ADD"}, "Mem0 2.2.1 reports only ADD events"
        assert (row.status == "stored") == bool(add["result"]["results"])
        assert row.memory_ids == [e["id"] for e in add["result"]["results"]]
        kind, n = peer.classify_reply(add["calls"][0]["reply"])
        assert kind in ("memories", "empty") and (kind == "empty") == (row.status == "nothing")
        assert n >= len(row.memory_ids)
    stored_ids = {i for r in rows for i in r.memory_ids}
    [memories] = [peer.parse_hits(v) for v in raw["stored"].values()]
    assert {h.memory_id for h in memories} == stored_ids


def test_search_hits_keep_mem0s_order_and_name_their_source_message(peer, recorded):
    raw, _ = recorded
    added = {a["message_id"] for a in raw["adds"]}
    for search in raw["searches"]:
        hits = peer.parse_hits(search["result"])
        assert hits and [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(h.source_id in added and h.session_date == "8 May 2023" for h in hits)


@pytest.mark.parametrize(("reply", "kind"), [
    ('{"memory": []}', "empty"), ("", "empty reply"), ('{"memory": [{"id": "0", "text": "Ana', "not JSON"),
    ('{"facts": ["Ana plants tomatoes"]}', "JSON without a 'memory' list (['facts'])"),
    ('```json\n{"memory": [{"id": "0", "text": "Ana plants tomatoes"}]}\n```', "memories")])
def test_a_reply_mem0_cannot_use_is_named_for_what_it_is(peer, reply, kind):
    assert peer.classify_reply(reply)[0] == kind


def test_a_reply_cut_at_the_token_cap_is_a_dropped_add_that_says_so(peer):
    row = peer.parse_add({"sample_id": "s", "message_id": "D1:1", "seconds": 3.0, "result": {"results": []},
                          "error": None, "calls": [{"prompt_tokens": 8000, "completion_tokens": 12,
                                                    "finish_reason": "length", "reply": '{"memory": [{"id'}],
                          "logs": [{"level": "ERROR", "logger": "mem0.memory.main",
                                    "message": "Error parsing extraction response: Expecting value"}]})
    assert row.status == "dropped" and row.reason.endswith("(the reply was cut at the token cap)")
    failed = peer.parse_add({"sample_id": "s", "message_id": "D1:2", "seconds": 0.1, "result": None,
                             "error": "LLMError: connection refused", "calls": [], "logs": []})
    assert failed.status == "failed" and "connection refused" in failed.reason


def test_the_context_keeps_the_best_memories_that_fit_the_budget(peer, recorded):
    raw, _ = recorded
    hits = peer.parse_hits(raw["searches"][0]["result"])
    words = lambda text: len(text.split())  # noqa: E731 (a token counter for the test)
    budget = words(f"{hits[0].session_date}: {hits[0].memory}") + 1
    context, used = peer.fit_context(hits, words, budget)
    assert used == [hits[0]] and context == f"8 May 2023: {hits[0].memory}"
    assert peer.fit_context(hits, words, 0) == ("", [])
