"""Query-local evidence (§3.4–3.5): hybrid search fused in Qdrant, sentences with their turn as
provenance, Topical Segments scored by their members, the Event Trajectory path, the budget filled,
and the sufficiency-gate rule. A store is filled by hand so each behaviour is pinned exactly."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pytest

from memsif import lexical
from memsif.answer.query import QueryPipeline
from memsif.backends import Backends
from memsif.config import MemSIFConfig
from memsif.interaction.sentences import build_sentences
from memsif.records import EventTrajectory, Message, TopicalSegment
from memsif.store import MemoryStore, SentenceQuery, StoredMessage
from tests.fakes import TRUSTS_SUFFICIENCY, FakeLLM, HashEmbedder, KeywordEmbedder

DAY = datetime(2023, 5, 8)


def _store(turns: list[tuple[str, str, str]], embedder, trajectories: dict[str, list[str]] | None = None,
           namespace: str = "t", sentence_trajectories: bool = True) -> MemoryStore:
    """(speaker, text, segment id) turns → a store with messages' sentences, segments and trajectories
    (``sentence_trajectories`` False: sentences without their trajectory id, as stores made before it)."""
    store = MemoryStore(in_memory=True)
    store.ensure_collections(embedder.name, embedder.dim)
    messages = [Message(id=f"D{k + 1}:1", namespace=namespace, speaker=sp, text=text, time=DAY + timedelta(days=k),
                        session_id=f"s{k}", index=k) for k, (sp, text, _) in enumerate(turns)]
    segment_of = {m.id: seg for m, (_, _, seg) in zip(messages, turns, strict=True)}
    vectors = embedder.embed_documents([m.text for m in messages])
    by_id = dict(zip([m.id for m in messages], vectors, strict=True))
    traj_of = {sid: tid for tid, sids in (trajectories or {}).items() for sid in sids}
    store.put_sentences(namespace, build_sentences(messages, by_id, segment_of, embedder,
                                                   traj_of if sentence_trajectories else None))
    segments = []
    for k, sid in enumerate(dict.fromkeys(segment_of.values())):
        members = [m for m in messages if segment_of[m.id] == sid]
        segments.append((TopicalSegment(id=sid, namespace=namespace, index=k, message_ids=[m.id for m in members],
                                        trajectory_id=traj_of.get(sid)),
                         np.mean([by_id[m.id] for m in members], axis=0)))
    store.put_segments(namespace, segments)
    store.put_messages(namespace, [StoredMessage(m, by_id[m.id], frozenset(), segment_of[m.id]) for m in messages])
    store.put_trajectories(namespace, [
        (EventTrajectory(id=tid, namespace=namespace, index=k, segment_ids=sids), np.ones(embedder.dim, np.float32))
        for k, (tid, sids) in enumerate((trajectories or {}).items())])
    return store


def _pipeline(store, embedder, llm=None, **config) -> QueryPipeline:
    cfg = MemSIFConfig(use_core_facts=False, use_active_facts=False, **config)
    return QueryPipeline(Backends(cfg, llm=llm or FakeLLM(), embedder=embedder, store=store), read_entities=False)


def test_sentences_are_whole_and_short_ones_are_joined():
    parts = lexical.split_sentences("Hey Mel!  Good to see you! I went to a support group yesterday. It was so "
                                    "powerful. Wow.")
    assert parts == ["Hey Mel! Good to see you!", "I went to a support group yesterday.", "It was so powerful. Wow."]
    assert " ".join(parts) == " ".join("Hey Mel!  Good to see you! I went to a support group yesterday. It was so "
                                       "powerful. Wow.".split())
    assert lexical.split_sentences("   ") == []


def test_lexical_terms_are_stemmed_without_stop_words_and_stable():
    assert lexical.terms("What did Caroline research about the adoption agencies?") == \
        ["carolin", "research", "adopt", "agenc"]
    assert lexical.encode_query("adopting") == lexical.encode_query("adoption")
    assert lexical.term_index("adopt") == 3991439738  # CRC-32: the same in every process
    doc = lexical.encode_document("adoption adoption agency", speaker="Caroline")
    weights = dict(zip(doc.indices, doc.values, strict=True))
    assert weights[lexical.term_index("adopt")] > weights[lexical.term_index("agenc")]  # tf 2 > tf 1, saturated
    assert lexical.term_index("carolin") in weights  # the speaker is a term of the sentence


def test_lexical_match_finds_what_the_dense_embedder_cannot():
    """A name the question shares with one sentence: dense scores are all equal (a constant
    embedder), so only the lexical half can rank it first; the fusion is Qdrant's."""

    class Flat(HashEmbedder):
        def embed_documents(self, texts):
            out = np.ones((len(texts), self.dim), np.float32)
            return out / np.linalg.norm(out, axis=1, keepdims=True)

    emb = Flat()
    turns = [("Ana", f"We talked about the weather on day {k}.", "S1") for k in range(8)]
    turns.insert(5, ("Ana", "My cousin Zbigniew moved to Gdansk last spring.", "S1"))
    store = _store(turns, emb)
    calls = []
    original = store.base.client.query_batch_points
    store.base.client.query_batch_points = lambda *a, **k: calls.append(k["requests"]) or original(*a, **k)
    hits = store.hybrid_search(
        "t", SentenceQuery(emb.embed_query("x"), lexical.encode_query("Where did Zbigniew move?")), 3)
    assert hits[0].sentence.message_id == "D6:1" and hits[0].found_by == ["dense", "lexical"]
    assert hits[0].lexical > 0 and all(h.lexical is None for h in hits[1:])
    fused = calls[0][0]
    assert len(fused.prefetch) == 2 and fused.query.rrf.k == 60  # prefetch + RRF in Qdrant


UNSPACED = ["我每天早上都看早报，然后去上班。", "我的C盘满了，需要清理一下。", "上周我在京都喝了很多抹茶。",
            "京都で抹茶を飲んだ。", "ผมชอบกินส้มตำมาก", "주말에 부산에서 회를 먹었어요."]


@pytest.mark.parametrize(("query", "found"), [("早报", {0}), ("C盘", {1}), ("抹茶", {2, 3}), ("京都", {2, 3}),
                                              ("抹茶を飲んだ", {3}), ("在京都喝", {2}), ("ส้มตำ", {4}), ("부산", {5})])
def test_chinese_japanese_thai_and_korean_words_are_found_by_keyword(query, found):
    """Scripts without spaces are indexed by characters and bigrams: a word of the question matches
    inside a clause the tokenizer keeps whole. A constant embedder: only the lexical half can find it."""

    class Flat(HashEmbedder):
        def embed_documents(self, texts):
            out = np.ones((len(texts), self.dim), np.float32)
            return out / np.linalg.norm(out, axis=1, keepdims=True)

    emb = Flat()
    turns = [("Li", text, "S1") for text in UNSPACED] + [("Li", f"We talked about the weather on day {k}.", "S1")
                                                         for k in range(4)]
    store = _store(turns, emb)
    assert all(lexical.encode_document(t) for t in UNSPACED), "every message gets lexical terms"
    hits = store.hybrid_search("t", SentenceQuery(emb.embed_query("x"), lexical.encode_query(query)), 3)
    top = [h.sentence.message_id for h in hits[:len(found)]]
    assert set(top) == {f"D{k + 1}:1" for k in found} and "lexical" in hits[0].found_by, (query, top)


def test_evidence_is_whole_sentences_of_the_turn_it_names():
    emb = HashEmbedder()
    text = "I love hiking in the Alps every summer. My sister prefers the beach though. Work is busy."
    store = _store([("Ben", text, "S1"), ("Ana", "Nice, the Alps are beautiful in July.", "S1")], emb)
    question = "Where does Ben hike?"
    evidence = _pipeline(store, emb).retriever.trace_back("t", question, emb.embed_query(question), 1500)
    sentences = set(lexical.split_sentences(text))
    mine = [e for e in evidence if e.source_message_ids == ["D1:1"]]
    assert mine, "the turn that answers must be found"
    for e in mine:
        assert all(sid.startswith("D1:1#") for sid in e.sentence_ids)
        shown = [lexical.split_sentences(text)[int(sid.split("#")[1])] for sid in e.sentence_ids]
        assert set(shown) <= sentences
        rest = e.statement
        for part in shown:
            rest = rest.replace(part, "")
        assert set(rest) <= {" ", "…"}, "the statement is whole sentences of the turn, nothing else"
        assert e.subject == "Ben" and e.time == DAY
        assert set(e.found_by) & {"dense", "lexical"} and "fused" in e.scores


def test_the_budget_is_filled_and_never_exceeded():
    emb = HashEmbedder()
    turns = [("Ana", f"Story number {k} is about the garden and the tomatoes we planted.", f"S{k // 4}")
             for k in range(40)]
    store = _store(turns, emb)
    llm = FakeLLM()  # counts words as tokens
    for budget in (60, 200, 400):
        pipeline = _pipeline(store, emb, llm, context_tokens=budget)
        answer = pipeline.ask("What did we plant in the garden?", namespace="t", generate=False)
        # full up to about one more item (a turn here costs about 20 tokens with its date line)
        assert budget - 25 <= answer.context_tokens <= budget, (budget, answer.context_tokens)
    days = [e.time for e in answer.evidence_used]
    assert days == sorted(days), "evidence is shown in chronological order"
    assert answer.context.count("Conversation excerpts") == 1


def test_segments_share_the_budget_so_one_topic_does_not_crowd_out_the_rest():
    emb = KeywordEmbedder({"trip": 0, "paris": 0, "rome": 1})
    paris = [("Ana", f"Our trip to Paris, part {k}: the museums and the trip by train.", "S1") for k in range(6)]
    rome = [("Ana", "Rome was nice too, I ate pasta and gelato every single day near the old fountain.", "S2")]
    store = _store(paris + rome, emb)
    question = "Which trips did Ana take?"
    qv = emb.embed_query(question)
    # A budget that holds four turns: without sharing, Paris fills it; with sharing, Rome gets in.
    flat = _pipeline(store, emb, context_tokens=70, use_segments=False, use_trajectories=False)
    shared = _pipeline(store, emb, context_tokens=70, use_trajectories=False, segment_decay=0.5)
    assert all(e.segment_id == "S1" for e in flat.retriever.trace_back("t", question, qv, 60))
    assert {"S1", "S2"} <= {e.segment_id for e in shared.retriever.trace_back("t", question, qv, 60)}


@pytest.mark.parametrize("sentence_trajectories", [True, False], ids=["sentences-with-trajectory", "older-store"])
def test_the_trajectory_path_brings_in_another_segment_of_the_same_event(sentence_trajectories):
    """The question matches S1 (the start of an adoption) strongly; the outcome sits in S3, far away,
    in the same Event Trajectory, and is not among the flat search's candidates; it holds the term the
    best hits lack ("approve"). A store whose sentences do not hold their trajectory id yet gets the
    same evidence through the slower segment-list filter."""
    emb = KeywordEmbedder({"adoption": 0, "agency": 0, "weather": 1, "football": 2})
    turns = [("Cara", "I contacted an adoption agency today, so exciting.", "S1"),
             ("Cara", "The adoption agency called back about the interview.", "S1")]
    turns += [("Cara", f"The weather is awful, rain again on day {k}.", "S2") for k in range(12)]
    turns += [("Cara", "Great news, we were approved and Luna comes home next week!", "S3")]
    turns += [("Cara", f"Football tonight: the referee did not approve goal {k}.", "S4") for k in range(12)]
    store = _store(turns, emb, trajectories={"E1": ["S1", "S3"], "E2": ["S2"], "E3": ["S4"]},
                   sentence_trajectories=sentence_trajectories)
    question = "Did the adoption agency approve it?"
    qv = emb.embed_query(question)
    flat = _pipeline(store, emb, evidence_candidates=2, use_trajectories=False)
    assert "D15:1" not in {e.source_message_ids[0] for e in flat.retriever.trace_back("t", question, qv, 1500)}
    off = _pipeline(store, emb, evidence_candidates=2, query_trajectory_top_k=1, trajectory_anchor_hits=2)
    assert "D15:1" not in {e.source_message_ids[0] for e in off.retriever.trace_back("t", question, qv, 1500)}, \
        "the path is off by default (trajectory_path)"
    with_et = _pipeline(store, emb, evidence_candidates=2, query_trajectory_top_k=1, trajectory_anchor_hits=2,
                        trajectory_path=True)
    filters = []
    search = store.hybrid_search
    store.hybrid_search = lambda ns, q, *a, **k: filters.append({**q.within, "excluded": q.excluded}) or search(
        ns, q, *a, **k)
    evidence = {e.source_message_ids[0]: e for e in with_et.retriever.trace_back("t", question, qv, 1500)}
    assert "D15:1" in evidence and "trajectory" in evidence["D15:1"].found_by
    assert evidence["D15:1"].trajectory_id == "E1"
    restricted = [k for k in filters if "trajectory_id" in k]
    assert restricted and restricted[0]["trajectory_id"] == ["E1"]
    assert restricted[0]["excluded"] == {"segment_id": ["S1"]}
    assert any("segment_id" in k for k in filters) == (not sentence_trajectories), "the list filter is the fallback"


def _facts_engine(engine_factory, llm, **kw):
    import json

    facts = {"facts": [{"subject": "Ana", "type": "Preference", "statement": "Ana loves pottery.", "sources": [1]}]}
    llm.answers.update({"core_extract": json.dumps(facts), "core_operation": "A", "answer": "Pottery.",
                        "segment_judge": 0.9, "trajectory_judge": 0.9})
    engine = engine_factory(llm=llm, core_facts=True, **kw)
    engine.ingest([Message(id="D1:1", namespace="t", speaker="Ana", text="I love pottery, I made a bowl.", time=DAY),
                   Message(id="D1:2", namespace="t", speaker="Ana", text="We went camping at the lake.", time=DAY)])
    return engine


def test_a_model_at_chance_never_gets_a_facts_only_context(engine_factory):
    llm = FakeLLM({"sufficiency": 0.99})
    llm.name = "SmolLM2-135M-Instruct (Q4_1 GGUF, packaged)"
    engine = _facts_engine(engine_factory, llm)
    result = engine.ask("What does Ana love?", namespace="t")
    assert result.facts_used and result.traced_back and result.evidence_used
    assert "sufficiency" not in llm.calls, "the check is not even asked of a model measured at chance"
    assert "not trusted" in result.gate_rule


def test_a_model_not_measured_on_the_check_is_not_asked_under_auto(engine_factory):
    llm = FakeLLM({"sufficiency": 0.99, "fact_verify": 0.9})
    llm.name = "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged, llama.cpp)"
    result = _facts_engine(engine_factory, llm).ask("What does Ana love?", namespace="t")
    assert result.traced_back and result.evidence_used and "sufficiency" not in llm.calls
    assert "not trusted" in result.gate_rule


def test_a_trusted_model_decides_and_the_setting_overrides_auto(engine_factory, monkeypatch):
    llm = FakeLLM({"sufficiency": 0.99})
    engine = _facts_engine(engine_factory, llm, profile=TRUSTS_SUFFICIENCY)
    engine = engine.with_config(engine.config.replace(gate_fact_floor=0.0))  # the floor: its own test
    result = engine.ask("What does Ana love?", namespace="t")
    assert result.sufficient and not result.traced_back and "facts only" in result.gate_rule
    never = engine.with_config(engine.config.replace(sufficiency_gate="never"))
    result = never.ask("What does Ana love?", namespace="t")
    assert result.traced_back and result.evidence_used and "not trusted" in result.gate_rule
    llm.name = "SmolLM2-135M-Instruct"
    forced = engine.with_config(engine.config.replace(sufficiency_gate="model"))
    assert forced.ask("What does Ana love?", namespace="t").sufficient


def test_the_gate_asks_only_when_the_facts_the_answer_would_see_are_about_the_question(engine_factory,
                                                                                      monkeypatch):
    """Below the gate's relevance floor (the best fact's cosine to the question) the model is not asked
    and evidence is added, however sure it would be; the rule names the best fact's score and the floor."""
    llm = FakeLLM({"sufficiency": 0.99})
    engine = _facts_engine(engine_factory, llm, profile=TRUSTS_SUFFICIENCY)
    best = engine.ask("What does Ana love?", namespace="t", generate=False).facts_used[0].score
    above = engine.with_config(engine.config.replace(gate_fact_floor=max(0.0, best - 0.01)))
    result = above.ask("What does Ana love?", namespace="t", generate=False)
    assert result.sufficient and not result.traced_back and "≥ the gate's relevance floor" in result.gate_rule
    asked = len(llm.calls["sufficiency"])
    below = engine.with_config(engine.config.replace(gate_fact_floor=min(1.0, best + 0.01)))
    result = below.ask("What does Ana love?", namespace="t", generate=False)
    assert not result.sufficient and result.traced_back and result.evidence_used
    assert len(llm.calls["sufficiency"]) == asked, "the model is not asked below the floor"
    assert f"best fact {best:.2f} < the gate's relevance floor" in result.gate_rule


def test_bad_retrieval_settings_are_refused():
    from memsif.errors import ConfigError

    with pytest.raises(ConfigError, match="sufficiency_gate"):
        MemSIFConfig(sufficiency_gate="sometimes")
    with pytest.raises(ConfigError, match="context_tokens"):
        MemSIFConfig(context_tokens=0)
    with pytest.raises(ConfigError, match="MEMSIF_SPEAKER_BOOST"):
        MemSIFConfig(speaker_boost=-1)
    with pytest.raises(ConfigError, match="segment_decay"):
        MemSIFConfig(segment_decay=1.5)


def test_a_store_without_the_sentence_index_says_how_to_upgrade_and_the_upgrade_loses_nothing(
        engine_factory, tmp_path, capsys, monkeypatch):
    from memsif.cli import main
    from memsif.errors import StoreError
    from memsif.store.qdrant import sentence_collection
    from tests.conftest import make_messages

    path = tmp_path / "data" / "qdrant"
    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5, "answer": "x"}),
                            store=MemoryStore(path=path))
    engine.ingest(make_messages(["I adopted a dog named Max.", "Max is a beagle puppy.", "Stocks fell today."]))
    before = (engine.messages("t"), engine.segments("t"), engine.trajectories("t"), engine.decisions("t"))
    # an old store: the same memory without its sentence index
    engine.store.base.client.delete_collection(sentence_collection("t"))
    with pytest.raises(StoreError, match="python -m memsif upgrade"):
        engine.ask("What is the dog called?", namespace="t")
    assert engine.missing_sentence_index("t") == 3
    assert engine.upgrade("t", ["sentence_index"])["sentence_index"] >= 3 and engine.missing_sentence_index("t") == 0
    assert engine.upgrade("t", ["sentence_index"])["sentence_index"] == 0, "a second upgrade writes nothing"
    assert engine.upgrade("t", ["sentence_trajectories"])["sentence_trajectories"] == 0, \
        "the added sentences hold their trajectory ids"
    assert (engine.messages("t"), engine.segments("t"), engine.trajectories("t"), engine.decisions("t")) == before
    result = engine.ask("What is the dog called?", namespace="t", generate=False)
    assert "D1:1" in result.context_source_ids or "D1:2" in result.context_source_ids
    engine.close()
    # the command line does the same for every namespace of a folder (here with the test's fakes)
    monkeypatch.setattr("memsif.cli._engine", lambda args: engine_factory(store=MemoryStore(path=path)))
    assert main(["upgrade", "--data-dir", str(tmp_path / "data")]) == 0
    assert "t: up to date" in capsys.readouterr().out


def test_export_carries_the_sentence_index_and_old_exports_get_one(engine_factory):
    from tests.conftest import make_messages

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}))
    engine.ingest(make_messages(["I adopted a dog named Max. He is a beagle puppy.", "Stocks fell today."]))
    data = engine.export_namespace("t")
    assert [s.sentence.id for s in data.sentences] == ["D1:1#0", "D1:1#1", "D1:2#0"]
    engine.import_namespace(data, namespace="copy")
    assert [s.id for s, _ in engine.store.sentences("copy")] == ["D1:1#0", "D1:1#1", "D1:2#0"]
    old = {k: v for k, v in data.model_dump(mode="json").items() if k != "sentences"}
    engine.import_namespace(old, namespace="old")
    assert [s.id for s, _ in engine.store.sentences("old")] == ["D1:1#0", "D1:1#1", "D1:2#0"]
    assert engine.missing_sentence_index("old") == 0


def test_hybrid_rag_baseline_fills_its_budget_with_sentences():
    from memsif.eval.data import EvalQuestion, EvalSample
    from memsif.eval.systems import CountingLLM, HybridRAGSystem

    msgs = [Message(id=f"D1:{k + 1}", namespace="x", speaker="Ann", time=DAY + timedelta(days=k),
                    text=f"Day {k}: I fed the cat. Then I read a long novel about sailing ships.")
            for k in range(30)]
    msgs[17] = msgs[17].model_copy(update={"text": "My cat is called Miso. She sleeps all day."})
    sample = EvalSample("a", msgs, [EvalQuestion("q1", "a", "What is Ann's cat called?", "Miso", "S-hop",
                                                 ["D1:18"])])
    system = HybridRAGSystem(CountingLLM(FakeLLM()), MemSIFConfig(), HashEmbedder(), budget=60)
    system.build(sample)
    ans = system.answer(sample.questions[0], generate=False)
    assert "D1:18" in ans.context_ids and "My cat is called Miso." in ans.context
    assert 30 <= len(ans.context.split()) <= 60


def test_the_dense_search_leaves_out_the_named_speakers_and_their_sentences_rise():
    from memsif.answer.retrieval import named_speakers, without_names

    speakers = ["Caroline", "Melanie", "Jon Snow"]
    question = "What did Caroline's mother tell jon about the race?"
    assert named_speakers(question, speakers) == ["Caroline", "Jon Snow"]
    assert without_names(question, ["Caroline", "Jon Snow"]) == "What did mother tell about the race?"
    assert without_names("Caroline?", ["Caroline"]) == "Caroline?", "nothing else left: the question itself"
    assert named_speakers("Who won the race?", speakers) == []
    # A name-heavy embedder: without the name, the content decides; the named speaker's sentences rise.
    emb = KeywordEmbedder({"caroline": 0, "race": 1})
    turns = [("Melanie", "Great job, Caroline! Caroline, you rock, Caroline!", "S1"),
             ("Caroline", "I ran the charity race last Sunday in the rain.", "S2"),
             ("Melanie", "I watched a race on TV.", "S3")]
    store = _store(turns, emb)
    question = "When did Caroline run the race?"
    stripped = store.hybrid_search("t", SentenceQuery(emb.embed_query(without_names(question, ["Caroline"])),
                                                      lexical.encode_query(question), speakers=["Caroline"],
                                                      speaker_boost=0.5), 3)
    assert stripped[0].sentence.message_id == "D2:1"
    assert stripped[0].fused > 1.4 * stripped[1].fused, "the named speaker's sentence is boosted in Qdrant"


def test_ingest_into_a_namespace_stored_before_the_index_indexes_the_old_messages_too(engine_factory):
    from memsif.store.qdrant import sentence_collection
    from tests.conftest import make_messages

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}))
    msgs = make_messages(["I adopted a dog named Max.", "Max is a beagle puppy.", "Stocks fell today."])
    engine.ingest(msgs[:2])
    engine.store.base.client.delete_collection(sentence_collection("t"))  # as an old store
    engine.ingest(msgs)
    assert engine.missing_sentence_index("t") == 0


def test_an_answer_naming_what_its_context_lacks_is_flagged_and_the_demo_model_is_named(engine_factory):
    from memsif.answer.check import unsupported_mentions
    from memsif.viz import answer_markdown

    assert unsupported_mentions("Melanie went to Paris in June, with two kids.",
                                "Melanie (8 May 2023): I took my 2 kids camping.") == ["Paris", "June"]
    assert unsupported_mentions("She has three kids.", "Melanie: I have two kids.") == ["three"]
    assert unsupported_mentions("Yes, on 7 May 2023.", "Caroline (7 May 2023): support group") == []
    # a capitalised function word of the answer's own language is no name
    assert unsupported_mentions("Sí, Melanie fue a la playa con sus hijos.", "Melanie: we went to the beach") == []
    assert unsupported_mentions("Die Kinder waren mit Melanie in Paris.", "Melanie: we went camping") == ["Kinder",
                                                                                                       "Paris"]
    # the question's own words are the premise, apart from what the answer brings itself
    from memsif.answer.check import from_question
    said = unsupported_mentions("Yes, Calvin played the Hollywood Bowl with Frank Ocean in 2022.",
                                "Calvin (3 May 2023): the show at the Bowl in LA was huge")
    assert from_question(said, "Did Calvin play at the Hollywood Bowl in 2022?") == (["Frank", "Ocean"],
                                                                                   ["Hollywood", "2022"])
    llm = FakeLLM({"sufficiency": 0.99})
    llm.name = "SmolLM2-135M-Instruct (Q4_1 GGUF, packaged)"
    engine = _facts_engine(engine_factory, llm)
    llm.answers["answer"] = "Ana loves pottery in Rome."
    result = engine.ask("What does Ana love?", namespace="t")
    assert result.model_at_chance and result.model.startswith("SmolLM2-135M")
    assert result.unsupported_mentions == ["Rome"]
    shown = answer_markdown(result)
    assert shown.startswith("Ana loves pottery in Rome.") and "packaged smoke-test model" in shown
    assert "MEMSIF_LLM_MODEL" in shown and "**Rome**" in shown
    assert shown.index("Best supporting messages") < len(shown) and "`D1:1`" in shown


def test_upgrade_rewrites_the_lexical_terms_of_an_older_stores_chinese_sentences(engine_factory, monkeypatch):
    from memsif import lexical as lex

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.6, "trajectory_judge": 0.5}))
    old_terms = lex.terms
    monkeypatch.setattr(lex, "terms", lambda text: [w for w in text.lower().split() if w])  # a clause is one term
    engine.ingest([Message(id="D1:1", namespace="zh", speaker="Li", text="我每天早上都看早报", session_id="s"),
                   Message(id="D1:2", namespace="zh", speaker="Li", text="Plain English words here", session_id="s")],
                  "zh")
    monkeypatch.setattr(lex, "terms", old_terms)
    # the Chinese sentence, and the English one (stems, stop words)
    assert engine.upgrade("zh", ["lexical_terms"])["lexical_terms"] == 2
    assert engine.upgrade("zh", ["lexical_terms"])["lexical_terms"] == 0, "a second run does nothing"
    hits = engine.store.hybrid_search(
        "zh", SentenceQuery(engine.embedder.embed_query("x"), lex.encode_query("早报")), 1)
    assert hits[0].sentence.message_id == "D1:1" and "lexical" in hits[0].found_by


SEVERAL = ["What activities does Melanie partake in?", "Which classical musicians does Melanie enjoy?",
           "What LGBTQ+ events has Caroline participated in?", "How many times has Melanie gone to the beach?",
           "What books has Melanie read?", "What items has Melanie bought?"]
ONE = ["What did Caroline research?", "When did Melanie go camping?", "What is Caroline's identity?",
       "Where did Caroline move from?", "What does Melanie think about the adoption?", "Who is Caroline?"]


@pytest.mark.parametrize("extractor", ["spacy", "regex"])
def test_a_question_that_asks_for_several_things_is_told_from_one_that_asks_for_one(extractor):
    from memsif.entities import RegexEntityExtractor, SpacyEntityExtractor

    if extractor == "spacy":
        try:
            found = SpacyEntityExtractor()
        except OSError as exc:
            pytest.skip(f"spaCy pipeline not installed: {exc}")
    else:
        found = RegexEntityExtractor()
    assert [q for q in SEVERAL if not found.asks_for_several(q)] == []
    assert [q for q in ONE if found.asks_for_several(q)] == []


def _facts(store, embedder, rows: list[tuple[str, str, str]], namespace: str = "t") -> None:
    """(id, subject, statement from the turn of the same number) CoreFacts."""
    from memsif.records import CoreFact

    facts = [CoreFact(id=fid, namespace=namespace, subject=subject, type="Event", statement=text,
                      source_message_ids=[f"D{fid[1:]}:1"]) for fid, subject, text in rows]
    store.put_facts(namespace, list(zip(facts, embedder.embed_documents([f.statement for f in facts]), strict=True)))


def test_an_aggregation_question_gathers_the_named_speakers_facts_and_their_source_sentences():
    """"What activities does Ann do?" names Ann and asks for several things: beside the nearest facts
    (fact_top_k = 1 here) up to aggregation_fact_top_k of Ann's facts join, none of Bo's; each used
    fact brings its source turn's best sentence into the evidence (found by "fact")."""
    from tests.fakes import TableEntities

    emb = HashEmbedder()
    turns = [("Ann", "We went camping at the lake. The weather was cold all week.", "S1"),
             ("Bo", "I started pottery classes on Mondays.", "S2"),
             ("Ann", "Yesterday I took the kids to the museum. Traffic was awful.", "S3"),
             ("Ann", "I signed up for a pottery class. It is like therapy.", "S4"),
             ("Bo", "I like running in the park.", "S5")]
    store = _store(turns, emb)
    _facts(store, emb, [("F1", "Ann", "Ann went camping at the lake."), ("F2", "Bo", "Bo takes pottery classes."),
                        ("F3", "Ann", "Ann took the kids to the museum."),
                        ("F4", "Ann", "Ann signed up for a pottery class."), ("F5", "Bo", "Bo likes running.")])
    cfg = MemSIFConfig(use_active_facts=False, fact_top_k=1, aggregation_fact_top_k=8, context_tokens=1500,
                       fact_sources=True)
    pipeline = QueryPipeline(Backends(cfg, llm=FakeLLM(), embedder=emb, store=store, entities=TableEntities()))
    question = "What activities does Ann do?"
    answer = pipeline.ask(question, namespace="t", generate=False)
    assert answer.aggregation and "Ann" in answer.aggregation_rule
    by_id = {f.id: f for f in answer.facts_used}
    assert {"F1", "F3", "F4"} <= set(by_id), "every fact of Ann's, across segments"
    assert {f.id for f in answer.facts_used if f.found_by == "subject"} <= {"F1", "F3", "F4"}, "none of Bo's"
    assert sum(f.found_by == "similarity" for f in answer.facts_used) == 1
    from_facts = {e.source_message_ids[0]: e for e in answer.evidence_used if "fact" in e.found_by}
    assert {"D1:1", "D3:1", "D4:1"} <= set(from_facts), "each fact's source turn is in the evidence"
    # one for one: the same question without the aggregation path has one fact
    off = QueryPipeline(Backends(cfg.replace(aggregation_fact_top_k=0, fact_sources=False), llm=FakeLLM(),
                                 embedder=emb, store=store, entities=TableEntities())).ask(question, namespace="t",
                                                                                           generate=False)
    assert off.aggregation and "aggregation_fact_top_k = 0" in off.aggregation_rule and len(off.facts_used) == 1
    assert not any("fact" in e.found_by for e in off.evidence_used)
    # a question for one thing takes the nearest facts only
    one = pipeline.ask("Where did Ann go camping?", namespace="t", generate=False)
    assert not one.aggregation and one.aggregation_rule.startswith("asks for one thing")
    assert len(one.facts_used) == 1


def test_an_aggregation_question_ranks_its_evidence_with_its_own_segment_weight():
    """Its answer is spread over many events: with aggregation_segment_weight 0 no segment relevance is
    added to its sentences' priority, while a question for one thing keeps segment_weight."""
    from tests.fakes import TableEntities

    emb = HashEmbedder()
    turns = [("Ann", "We went camping at the lake.", "S1"), ("Ann", "The lake was cold.", "S1"),
             ("Ann", "I took the kids to the museum.", "S2"), ("Bo", "Nice museum!", "S2")]
    store = _store(turns, emb)
    cfg = MemSIFConfig(use_core_facts=False, use_active_facts=False, context_tokens=1500,
                       segment_weight=0.25, aggregation_segment_weight=0.0)
    pipeline = QueryPipeline(Backends(cfg, llm=FakeLLM(), embedder=emb, store=store, entities=TableEntities()))
    several = pipeline.ask("What activities does Ann do at the lake?", namespace="t", generate=False)
    assert several.aggregation and several.evidence_used
    assert not any("segment" in e.found_by for e in several.evidence_used)
    one = pipeline.ask("Where did Ann go camping?", namespace="t", generate=False)
    assert not one.aggregation and any("segment" in e.found_by for e in one.evidence_used)


def test_the_flat_floor_holds_hybrid_rags_best_sentences_whatever_the_facts_and_segments_add():
    """A segment's relevance lifts the weak turns beside the best one (museums of the Paris trip)
    above other segments' better turns (other trips). flat_share = 1: the context is the flat
    design's (Hybrid RAG's) and no fact takes its room; 0.5: the flat design's best turns that fit
    half the budget all stay, and the facts and the segment-ranked turns share the rest; 0: the
    facts fill first and the segment ranking decides, as before."""
    emb = KeywordEmbedder({"trip": 0, "train": 1, "fountain": 2})
    best = [("Ana", "Our trip by train to Paris was long, the trip was great.", "S1")]
    museums = [("Ana", f"We saw museum number {k} in Paris.", "S1") for k in range(5)]
    trips = [("Ana", f"Another trip, day {k}, to the old fountain.", f"S{k + 2}") for k in range(5)]
    turns = best + museums + trips
    store = _store(turns, emb)
    _facts(store, emb, [(f"F{k + 1}", "Ana", text) for k, (_, text, _) in enumerate(turns)])
    question = "Which trips did Ana take by train?"
    flat_cfg = MemSIFConfig(use_segments=False, use_trajectories=False, use_core_facts=False, use_active_facts=False)

    def ids(cfg: MemSIFConfig) -> tuple[list[str], object]:
        pipeline = QueryPipeline(Backends(cfg, llm=FakeLLM(), embedder=emb, store=store), read_entities=False)
        answer = pipeline.ask(question, namespace="t", generate=False)
        return [e.source_message_ids[0] for e in answer.evidence_used], answer

    def memsif(share: float, facts: int = 2) -> MemSIFConfig:
        return MemSIFConfig(use_active_facts=False, fact_top_k=facts, segment_weight=5.0, context_tokens=120,
                            flat_share=share)

    flat_ids, _ = ids(flat_cfg.replace(context_tokens=120))
    floor_ids, _ = ids(flat_cfg.replace(context_tokens=60))
    museum_ids = {f"D{k + 2}:1" for k in range(5)}
    assert floor_ids and not museum_ids & set(floor_ids), "the flat design ranks the other trips above the museums"
    (whole, whole_answer), (half, half_answer), (none, _) = (ids(memsif(s)) for s in (1.0, 0.5, 0.0))
    assert whole == flat_ids and not whole_answer.facts_used
    assert set(floor_ids) <= set(half), "the flat design's best turns within the floor stay"
    assert museum_ids & set(half) and half_answer.facts_used, "the rest is the structure's and the facts'"
    assert half_answer.context_tokens <= 120
    assert not set(floor_ids[1:]) <= set(none), "without the floor the segment ranking pushes them out"
    many = [len(ids(memsif(share, facts=12))[1].facts_used) for share in (0.0, 0.5)]
    assert many[0] > many[1], "without the floor the facts take more of the budget"
    with pytest.raises(Exception, match="flat_share"):
        MemSIFConfig(flat_share=1.5)
