"""The Mem0 side-by-side script (``benchmarks/peers/mem0_side_by_side.py``) reads Mem0's own output:
checked on a recorded small run (six adds and two searches of conv-26 with Mem0 2.2.1 on the packaged
1.5B through llama.cpp's server, ``tests/data/mem0-raw/``), with no model and no Mem0 installed."""

import importlib.util
import json
import sys
from dataclasses import asdict

import pytest

from tests import DATA, ROOT

RECORDED = DATA / "mem0-raw"


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


def _conversation_folder(peer, folder, sample_id, slice_, adds, stored, mem0_seconds, memsif_seconds, answers):
    """A conversation run's folder as ``compare_one`` leaves it, from hand-made rows: ``answers`` is
    [(qid, category, memsif right?, mem0 right?)]."""
    from memsif.eval.results import QuestionResult

    (folder / "memsif").mkdir(parents=True)
    peer.write_slice_file(EXAMPLE_OR_DEV[sample_id], [slice_], folder / "slice-locomo.json")
    mine = [QuestionResult(dataset="locomo", system="memsif", label="memsif@600", sample_id=sample_id, qid=q,
                           category=c, question=q, gold="x", answer="x" if ok else "y", f1=float(ok),
                           llm_correct=ok) for q, c, ok, _ in answers]
    (folder / "memsif" / "questions.jsonl").write_text("".join(r.json_line() + "\n" for r in mine))
    theirs = [peer.AnswerRow("mem0", sample_id, q, c, q, "x", answer="x" if ok else "y", f1=float(ok),
                             llm_correct=ok) for q, c, _, ok in answers]
    (folder / "mem0-questions.jsonl").write_text("".join(json.dumps(asdict(r)) + "\n" for r in theirs))
    (folder / "mem0-adds.jsonl").write_text("".join(json.dumps(asdict(a)) + "\n" for a in adds))
    (folder / "mem0-raw.json").write_text(json.dumps({"stored": {sample_id: stored}}))
    n = len(slice_.messages)
    memsif = {"messages": n, "seconds_total": memsif_seconds, "llm_calls_per_message": 0.5,
              "tokens_per_message": 100.0, "memories_stored": {sample_id: 2}, "memories_stored_total": 2,
              "fact_operations": 5, "failed_or_dropped": []}
    results = {"what": "", "command": f"run {sample_id}", "date": f"2026-12-0{len(sample_id) % 9}",
               "host": {"model_name": "AMD EPYC", "cpus_usable": 2, "lscpu": "", "flags": HOST_FLAGS[sample_id]},
               "data": {"samples": {sample_id: {"messages": n, "questions": len(answers)}}}, "settings": {},
               "systems": {"memsif": {"command": "harness", "model": "qwen", "construction": memsif},
                           "mem0": {"version": "2.2.1", "model": "qwen", "spacy_pipeline": "x"}},
               "ratio_seconds_per_message_mem0_over_memsif": round(mem0_seconds / len(adds) / (memsif_seconds / n), 2)}
    (folder / "results.json").write_text(json.dumps(results))


HOST_FLAGS = {"conv-26": "fpu avx avx2", "conv-30": "fpu avx avx2 avx512f avx512bw"}
EXAMPLE_OR_DEV = {"conv-26": ROOT / "assets" / "locomo-conv-26.json",
                  "conv-30": ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"}


@pytest.mark.skipif(not EXAMPLE_OR_DEV["conv-30"].exists(), reason="needs ../shared/data/locomo/locomo_dev.json")
def test_conversations_run_one_at_a_time_pool_into_one_table(peer, recorded, tmp_path):
    """Each conversation is a run of its own (its seconds ratio measured within it); ``pool`` adds their
    rows up: answers and paired differences over all questions, Mem0's adds and stored memories
    together, MemSIF's construction summed, the memory sample drawn from every conversation."""
    raw, _ = recorded
    out = tmp_path / "side-by-side"
    slices = {sid: peer.load_slices(EXAMPLE_OR_DEV[sid], [sid], 0, 6, None)[0] for sid in EXAMPLE_OR_DEV}
    adds26 = [peer.parse_add(a) for a in raw["adds"]]  # six recorded adds, three memories stored
    adds30 = [peer.AddRow("conv-30", m.id, 30.0, 1, 8000, 50, {}, [], 0, "nothing", "")
              for m in slices["conv-30"].messages]
    _conversation_folder(peer, out / "conv-26", "conv-26", slices["conv-26"], adds26, raw["stored"]["conv-26"],
                         sum(a.seconds for a in adds26), 12.0,
                         [("q1", "S-hop", True, False), ("q2", "Temp", True, True)])
    _conversation_folder(peer, out / "conv-30", "conv-30", slices["conv-30"], adds30, {"results": []}, 180.0, 6.0,
                         [("q3", "S-hop", False, False)])
    results = peer.pool(out, seed=0)
    memsif, mem0 = results["systems"]["memsif"], results["systems"]["mem0"]
    assert memsif["answers"]["questions"] == mem0["answers"]["questions"] == 3
    assert memsif["answers"]["llm_judge"]["mean"] == pytest.approx(2 / 3, abs=1e-4)
    assert mem0["answers"]["llm_judge"]["mean"] == pytest.approx(1 / 3, abs=1e-4)
    assert results["paired_mem0_minus_memsif"]["llm_correct"]["diff"] == pytest.approx(-1 / 3, abs=1e-4)
    assert memsif["construction"]["messages"] == 12 and memsif["construction"]["seconds_per_message"] == 1.5
    assert mem0["construction"]["messages"] == 12
    stored26 = len(raw["stored"]["conv-26"]["results"])
    assert mem0["construction"]["memories_stored"] == {"conv-26": stored26, "conv-30": 0}
    pooled = (sum(a.seconds for a in adds26) + 180.0) / 12 / 1.5
    assert results["ratio_seconds_per_message_mem0_over_memsif"] == pytest.approx(pooled, abs=0.01)
    assert set(results["conversations"]) == {"conv-26", "conv-30"}
    assert results["conversations"]["conv-30"]["ratio_seconds_per_message_mem0_over_memsif"] == 30.0
    assert results["command"].endswith(f"--out {out} --pool"), "the pooled figures name the command that pools them"
    text = (out / "results.md").read_text()
    assert all(f"`{results['conversations'][c]['command']}`" in text for c in ("conv-26", "conv-30"))
    assert "conv-30: 6 messages, 1 questions; seconds per added message Mem0 / MemSIF 30.0" in text
    # each run names its host's vector units (llama.cpp's speed follows them), and the pooled line both
    assert "2026-12-07, AMD EPYC, 2 CPUs, AVX2, no AVX-512, no AMX: `run conv-26`" in text
    assert "Hosts: AMD EPYC, 2 CPUs, AVX2, no AVX-512, no AMX; AMD EPYC, 2 CPUs, AVX-512, no AMX;" in text
    assert peer.host_label({"model_name": "Intel Xeon", "cpus_usable": 2, "flags": "avx2 avx512f amx_tile"}) \
        == "Intel Xeon, 2 CPUs, AVX-512, AMX"
    assert peer.host_label({"model_name": "?", "cpus_usable": 1}) == "?, 1 CPUs, flags unknown"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit, match="holds no conversation run"):
        peer.pool(empty, seed=0)


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.skipif(not EXAMPLE_OR_DEV["conv-30"].exists(), reason="needs ../shared/data/locomo/locomo_dev.json")
def test_every_stored_memory_of_both_systems_is_labelled_blind_and_labels_survive_a_new_conversation(
        peer, recorded, tmp_path):
    """``pool`` writes one blind set of all stored memories (Mem0's and MemSIF's current CoreFacts, with
    their dated messages and the ten before them, no system named), keeps numbers and labels when a
    conversation is added, and counts the labels per system with a Wilson interval."""
    raw, _ = recorded
    out = tmp_path / "side-by-side"
    slices = {sid: peer.load_slices(EXAMPLE_OR_DEV[sid], [sid], 0, 6, None)[0] for sid in EXAMPLE_OR_DEV}
    adds26 = [peer.parse_add(a) for a in raw["adds"]]
    folder = out / "conv-26"
    _conversation_folder(peer, folder, "conv-26", slices["conv-26"], adds26, raw["stored"]["conv-26"], 60.0, 12.0,
                         [("q1", "S-hop", True, False)])
    fact = {"id": "F1", "status": "current", "subject": "Caroline", "statement": "Caroline went to a support group.",
            "event_time": "2023-05-07T00:00:00", "source_message_ids": ["D1:3"]}
    gone = {**fact, "id": "F2", "status": "superseded"}
    (folder / "memsif" / "facts-conv-26.json").write_text(json.dumps({"facts": [fact, gone]}))
    peer.pool(out, seed=0)
    blind, key = _read(out / "labels" / "blind.jsonl"), _read(out / "labels" / "key.jsonl")
    stored = len(raw["stored"]["conv-26"]["results"])
    assert len(blind) == len(key) == stored + 1, "every Mem0 memory and the one current CoreFact"
    assert [b["item"] for b in blind] == [k["item"] for k in key] == list(range(1, stored + 2))
    assert not any("system" in b or "mem0" in json.dumps(b).lower() for b in blind), "the set names no system"
    core = next(b for b, k in zip(blind, key, strict=True) if k["system"] == "memsif")
    assert core["memory"] == "Caroline: Caroline went to a support group. (when: 2023-05-07)"
    assert core["source_messages"][0].startswith("D1:3 (8 May 2023) ") and len(core["earlier_messages"]) == 2
    assert all(b["source_messages"] for b in blind) and all(b["supported"] is None for b in blind)

    first_mem0 = next(k["item"] for k in key if k["system"] == "mem0")
    for b, k in zip(blind, key, strict=True):  # the labeller: the CoreFact and the first Mem0 item supported
        b["supported"] = k["system"] == "memsif" or k["item"] == first_mem0
        b["why_not"] = "" if b["supported"] else "invented detail: not said"
    (out / "labels" / "blind.jsonl").write_text("".join(json.dumps(b) + "\n" for b in blind))
    adds30 = [peer.AddRow("conv-30", m.id, 30.0, 1, 8000, 50, {}, [], 0, "nothing", "")
              for m in slices["conv-30"].messages]
    _conversation_folder(peer, out / "conv-30", "conv-30", slices["conv-30"], adds30, {"results": []}, 180.0, 6.0,
                         [("q3", "S-hop", False, False)])
    other = {**fact, "source_message_ids": ["D1:1"]}
    (out / "conv-30" / "memsif" / "facts-conv-30.json").write_text(json.dumps({"facts": [other]}))
    results = peer.pool(out, seed=0)
    again = _read(out / "labels" / "blind.jsonl")
    assert again[:len(blind)] == blind and len(again) == len(blind) + 1, "labels kept, the new CoreFact appended"
    assert _read(out / "labels" / "key.jsonl")[-1] == {"item": len(blind) + 1, "system": "memsif",
                                                      "sample_id": "conv-30", "ref": "F1"}
    labelled = results["systems"]["mem0"]["stored_labelled"]
    assert labelled["labelled"] == stored and labelled["supported"] == 1
    assert labelled["unsupported_by_class"] == {"invented detail": stored - 1}
    assert results["systems"]["memsif"]["stored_labelled"]["supported"] == 1
    assert 0 <= labelled["ci_low"] <= labelled["share"] <= labelled["ci_high"] <= 1
    assert "stored memories labelled supported" in (out / "results.md").read_text()
