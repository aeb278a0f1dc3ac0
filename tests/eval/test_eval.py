"""The evaluation protocol's pieces on small fixtures with hand-computed answers (§4.1, App. A, D)."""

import json
import re
from datetime import datetime

import numpy as np
import pytest

from memsif.eval.data import EvalQuestion, EvalSample, load_locomo, load_longmemeval, seeded_order
from memsif.eval.metrics import (
    asv,
    best_sentences,
    evidence_recall,
    fixed_segments,
    locomo_f1,
    mean_interval,
    normalize_answer,
    paired_bootstrap,
    random_sntd,
    sntd,
    strict_recall,
    ted,
    token_f1,
)
from memsif.eval.runner import EvalOptions, run_eval
from memsif.eval.systems import CountingLLM, FullContextSystem, MemSIFSystem, NaiveRAGSystem, render_turn
from memsif.records import Message
from tests import ROOT
from tests.conftest import LOCOMO_DEV, LONGMEMEVAL, requires_shared
from tests.fakes import FakeLLM, KeywordEmbedder

MAY = datetime(2023, 5, 8)


# ------------------------------------------------------------------ categories, exclusions, order
def _locomo_file(tmp_path):
    conv = {"speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
                          {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I started pottery."},
                          {"speaker": "Ann", "dia_id": "D1:3", "text": "Miso sleeps all day."}]}
    qa = [{"question": "Cat's name?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
          {"question": "What did Ann adopt and what does it do?", "answer": "a cat, sleeps",
           "evidence": ["D1:1; D1:3"], "category": 1},
          {"question": "When?", "answer": "8 May 2023", "evidence": ["D1:1"], "category": 2},
          {"question": "Would Bo like clay?", "answer": "likely yes; pottery", "evidence": ["D1:2"], "category": 3},
          {"question": "What did Bo adopt?", "adversarial_answer": "a cat", "evidence": ["D1:1"], "category": 5},
          {"question": "Odd evidence", "answer": "x", "evidence": ["D9:9"], "category": 4}]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conv, "qa": qa}]))
    return path


def test_locomo_categories_map_to_the_paper_and_adversarial_is_excluded(tmp_path):
    [sample] = load_locomo(_locomo_file(tmp_path))
    assert [q.category for q in sample.questions] == ["S-hop", "M-hop", "Temp", "Kno", "S-hop"]
    assert sample.excluded == 1
    assert sample.questions[1].evidence_ids == ["D1:1", "D1:3"], "'D1:1; D1:3' is two evidence ids"
    assert sample.questions[4].evidence_ids == [] and sample.missing_evidence == ["D9:9"]


def test_longmemeval_types_map_and_abstention_is_excluded(tmp_path):
    item = {"question_id": "q1", "question_type": "knowledge-update", "question": "Who?", "answer": "Tomas",
            "question_date": "2023/05/30 (Tue) 10:15", "haystack_session_ids": ["s1"],
            "haystack_dates": ["2023/05/02 (Tue) 09:12"],
            "haystack_sessions": [[{"role": "user", "content": "I go with Tomas.", "has_answer": True},
                                   {"role": "assistant", "content": "Nice."}]]}
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([item, {**item, "question_id": "q1_abs"},
                                {**item, "question_id": "q2", "question_type": "single-session-preference"}]))
    samples = load_longmemeval(path)
    assert [[q.category for q in s.questions] for s in samples] == [["Kno"], [], ["S-hop"]]
    assert samples[1].excluded == 1
    assert samples[0].questions[0].evidence_ids == ["s1:1"]
    assert samples[0].questions[0].question_date == "2023/05/30 (Tue) 10:15"


@requires_shared
def test_the_shared_dev_files_load_with_every_category():
    locomo = load_locomo(LOCOMO_DEV)
    assert len(locomo) == 3 and all(s.excluded > 0 for s in locomo)
    assert {q.category for s in locomo for q in s.questions} == {"S-hop", "M-hop", "Temp", "Kno"}
    assert all(q.evidence_ids for s in locomo for q in s.questions[:20])
    lme = load_longmemeval(LONGMEMEVAL)
    assert sum(s.excluded for s in lme) >= 1


def test_seeded_order_is_fixed_per_seed_and_sample():
    qs = [EvalQuestion(f"q{i}", "s", f"Q{i}", "", "S-hop", []) for i in range(20)]
    first = [q.qid for q in seeded_order(qs, 0, "conv-1")]
    assert first == [q.qid for q in seeded_order(qs, 0, "conv-1")]
    assert first != [q.qid for q in qs]
    assert first != [q.qid for q in seeded_order(qs, 1, "conv-1")]
    assert sorted(first) == sorted(q.qid for q in qs)


# ------------------------------------------------------------------ metrics
def test_token_f1_and_locomo_variants():
    assert normalize_answer("The Cat, and a Dog!") == "cat dog"
    assert token_f1("Miso", "miso") == 1.0
    assert token_f1("a cat named Miso", "Miso") == pytest.approx(2 * (1 / 3) * 1 / (1 / 3 + 1))
    assert token_f1("", "Miso") == 0.0
    # M-hop: each gold part takes its best predicted part
    assert locomo_f1("sleeps, a cat", "a cat, sleeps", "M-hop") == 1.0
    assert locomo_f1("a cat", "a cat, sleeps", "M-hop") == 0.5
    # Kno: only the gold before ';'
    assert locomo_f1("likely yes", "likely yes; pottery", "Kno") == 1.0


def test_evidence_recall_by_text_and_by_provenance():
    texts = {"D1:1": "I adopted a cat named Miso.", "D1:3": "Miso sleeps all day."}
    context = "Facts:\n- Ann: Ann has a cat.\nConversation excerpts:\n- Ann (8 May 2023): I adopted a  cat named Miso."
    text, ids = evidence_recall(["D1:1", "D1:3"], texts, context, ["D1:1", "D1:3"])
    assert text == 0.5, "only D1:1's text is in the context"
    assert ids == 1.0, "both ids are behind the context (D1:3 through a fact)"
    assert evidence_recall([], texts, context, []) == (None, None)


def test_strict_recall_needs_the_sentence_that_bears_the_answer():
    texts = {"D1:1": "We went hiking on Sunday with the kids. Later I adopted a cat named Miso from the shelter.",
             "D1:2": "Sounds lovely. Tell me more about the trip."}
    assert best_sentences(texts["D1:1"], "a cat named Miso") == ["Later I adopted a cat named Miso from the shelter."]
    answer_bearing = "- Ann: Later I adopted a  cat named Miso from the shelter."
    other_sentence = "- Ann: We went hiking on Sunday with the kids."
    assert strict_recall(["D1:1"], texts, "a cat named Miso", answer_bearing) == 1.0
    assert strict_recall(["D1:1"], texts, "a cat named Miso", other_sentence) == 0.0, \
        "another sentence of the gold turn is not the evidence"
    # no sentence shares a word with the answer: a tie, so every sentence is needed
    both = "- Bo: Sounds lovely. Tell me more about the trip."
    assert strict_recall(["D1:2"], texts, "Yes", both) == 1.0
    assert strict_recall(["D1:2"], texts, "Yes", "- Bo: Sounds lovely.") == 0.0
    assert strict_recall(["D1:1", "D1:9"], texts, "Miso", answer_bearing) == 0.5, "an unknown turn id is not found"
    assert strict_recall([], texts, "Miso", answer_bearing) is None


def test_ted_on_hand_computed_cases():
    assert ted([0, 99], 100) == 1.0
    assert ted([10, 40, 20], 101) == pytest.approx(0.3)
    assert ted([5], 100) is None


def test_asv_and_sntd_on_hand_computed_cases():
    e = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    # adjacent cosines 1, 0, 1 → |0−1| + |1−0| over m−2 = 2
    assert asv(e) == 1.0
    assert asv(e[:2]) is None
    assert fixed_segments(np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 0.0]]), 2) == pytest.approx(
        np.array([[2 ** -0.5, 2 ** -0.5], [1.0, 0.0]]))
    # nearest neighbour of 0 is 1 (d = 1/3), of 1 is 0, of 2 is 3, of 3 is 2 → SNTD@1 = 1/3
    assert sntd(e, 1) == pytest.approx(1 / 3)
    # m = 3: distances from 0: 1/2, 2/2; from 1: 1/2, 1/2; from 2: 2/2, 1/2 → mean 2/3
    assert random_sntd(3) == pytest.approx(2 / 3)


def test_paired_bootstrap_known_answers():
    a, b = [1.0] * 30, [0.0] * 30
    groups = [f"c{i % 3}" for i in range(30)]
    result = paired_bootstrap(a, b, groups, resamples=500)
    assert result["diff"] == 1.0 and result["ci_low"] == 1.0 and result["ci_high"] == 1.0
    assert result["p_le_zero"] == 0.0
    same = paired_bootstrap([1, 0] * 15, [1, 0] * 15, groups, stratified=True, resamples=500)
    assert same["diff"] == 0.0 and same["ci_low"] == 0.0 and same["ci_high"] == 0.0
    # a beats b by 1 on one conversation of three, ties elsewhere: diff 1/3; conversation resampling
    # gives means in {0, 1/3, 2/3, 1}, so the CI spans 0 .. 2/3 at least
    mixed = paired_bootstrap([1] * 10 + [0] * 20, [0] * 30, ["c0"] * 10 + ["c1"] * 10 + ["c2"] * 10, resamples=2000)
    assert mixed["diff"] == pytest.approx(1 / 3) and mixed["ci_low"] == 0.0 and mixed["ci_high"] >= 2 / 3 - 1e-9
    with pytest.raises(ValueError):
        paired_bootstrap([1], [1, 2], ["a"])


def test_a_means_interval_holds_its_known_answers():
    assert mean_interval([1.0] * 20, ["a"] * 20, resamples=200) == (1.0, 1.0, 1.0)
    mean, low, high = mean_interval([1, 0] * 50, ["a"] * 50 + ["b"] * 50, resamples=4000)
    # 100 fair coin flips: the mean's standard error is 0.05, so the 95 % interval is about 0.4 .. 0.6
    assert mean == 0.5 and 0.38 < low < 0.44 and 0.56 < high < 0.62
    # resampled within each group: one group all right, one all wrong, each half the questions -> no spread
    assert mean_interval([1] * 10 + [0] * 10, ["a"] * 10 + ["b"] * 10, resamples=500) == (0.5, 0.5, 0.5)
    for values, groups in (([], []), ([1.0], ["a", "b"])):
        with pytest.raises(ValueError, match="same length"):
            mean_interval(values, groups)


# ------------------------------------------------------------------ baselines and the run
def _sample(n=6, sample_id="s1"):
    texts = ["I adopted a cat named Miso.", "The weather is grey.", "Pottery class on Tuesdays.",
             "Miso sleeps all day.", "We watched a film.", "My sister visits in June."][:n]
    msgs = [Message(id=f"D1:{i + 1}", namespace=sample_id, speaker="Ann", text=t, time=MAY, session_id="s",
                    index=i) for i, t in enumerate(texts)]
    qs = [EvalQuestion(f"{sample_id}/q0", sample_id, "What is the cat called?", "Miso", "S-hop", ["D1:1"]),
          EvalQuestion(f"{sample_id}/q1", sample_id, "What does the cat do?", "sleeps ZZGOLD", "M-hop",
                       ["D1:1", "D1:4"])]
    return EvalSample(sample_id, msgs, qs)


class TinyWindow(FakeLLM):
    context_window = 512 + 256 + 20   # leaves a 20-token budget for the baselines


def test_full_context_keeps_the_most_recent_turns_within_budget(engine_factory):
    llm = CountingLLM(TinyWindow({"answer": "Miso"}))
    system = FullContextSystem(llm, engine_factory().config)
    system.build(_sample())
    ans = system.answer(_sample().questions[0])
    # one word per token in the fake: each rendered turn costs its words + 1
    kept = ans.context_ids
    assert kept[-1] == "D1:6" and "D1:1" not in kept
    assert sum(len(render_turn(m).split()) + 1 for m in _sample().messages if m.id in kept) <= 20
    assert ans.answer == "Miso" and ans.llm_calls == 1 and ans.tokens > 0


def test_naive_rag_takes_the_closest_turns_in_chronological_order(engine_factory):
    llm = CountingLLM(FakeLLM({"answer": "Miso"}))
    embedder = KeywordEmbedder({"cat": 0, "miso": 0, "pottery": 1})
    system = NaiveRAGSystem(llm, engine_factory().config, embedder)
    system.build(_sample())
    ans = system.answer(_sample().questions[0])
    assert ans.context_ids[0] == "D1:1" and ans.context_ids == sorted(ans.context_ids, key=lambda i: int(i[3:]))


def test_a_run_resets_activefacts_across_conversations_and_never_feeds_gold(engine_factory, tmp_path):
    facts = {"facts": [{"subject": "Ann", "type": "Preference", "statement": "Ann has a cat named Miso.",
                        "sources": [1]}]}
    fake = FakeLLM({"segment_judge": 0.9, "trajectory_judge": 0.9, "core_extract": json.dumps(facts),
                    "core_operation": "A", "sufficiency": 0.1, "answer": "Miso",
                    "eval_judge": {"CORRECT": 0.8, "WRONG": 0.2}})
    counting = CountingLLM(fake)
    engine = engine_factory(llm=counting, embedder=KeywordEmbedder({"cat": 0, "miso": 0, "sleep": 0}),
                            theta_src=0.0, theta_qry=0.0)
    out = tmp_path / "run"
    summary = run_eval([_sample(sample_id="a"), _sample(sample_id="b")],
                       EvalOptions("locomo", systems=["memsif", "full-context", "naive-rag"]),
                       engine=engine, counting=counting, out=out, log=lambda _: None)
    rows = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 2 * 3
    assert {r["label"] for r in rows} == {"memsif", "full-context", "naive-rag"}
    memsif = [r for r in rows if r["label"] == "memsif"]
    # ActiveFacts promoted in conversation a do not exist in conversation b's namespace
    second_a = next(r for r in memsif if r["sample_id"] == "a" and r["order"] == 1)
    first_b = next(r for r in memsif if r["sample_id"] == "b" and r["order"] == 0)
    assert any(i.startswith("A") for i in second_a["sys_fact_ids"]), "θ = 0: the first answer promotes an ActiveFact"
    assert not any(i.startswith("A") for i in first_b["sys_fact_ids"]), "ActiveFacts leaked across conversations"
    assert engine.active_facts("eval-locomo-a-none") and engine.active_facts("eval-locomo-b-none")
    # gold answers never reach memory: no stored message or fact holds a gold string that is not in the data
    stored = engine.export_namespace("eval-locomo-a-none").model_dump_json()
    assert "sleeps all day" in stored and "ZZGOLD" not in stored
    # scores, recall and the report
    assert all(r["f1"] == (1.0 if r["gold"] == "Miso" else 0.0) for r in rows)
    assert all(r["llm_correct"] is True for r in rows)
    assert summary.systems["memsif"].total.n == 4
    assert summary.systems["memsif"].cost.build_llm_calls > 0
    assert summary.systems["full-context"].cost.build_llm_calls == 0
    assert "| memsif |" in (out / "report.md").read_text()
    # how MemSIF found each gold turn: every gold turn of its rows is counted once, under one path
    paths = summary.systems["memsif"].gold_paths["total"]
    assert sum(paths.values()) == sum(len(r["evidence_ids"]) for r in memsif)
    assert paths["missed"] == sum(e not in r["context_ids"] for r in memsif for e in r["evidence_ids"])
    assert summary.systems["naive-rag"].gold_paths["total"] is None, "a baseline has no paths"
    assert "How MemSIF's context found the gold turns" in (out / "report.md").read_text()
    assert all(r["recall_strict"] is not None for r in rows)
    assert (out / "scores.html").exists() and (out / "diagnostics.html").exists()
    assert set(summary.diagnostics["asv"]) == {"1", "2", "4", "8"}


def test_a_failed_answer_or_judge_is_recorded_and_the_run_goes_on(engine_factory, tmp_path):
    fake = FakeLLM({"answer": "Miso", "eval_judge": {"CORRECT": 0.9, "WRONG": 0.1}}, fail={"answer"})
    counting = CountingLLM(fake)
    engine = engine_factory(llm=counting)
    summary = run_eval([_sample()], EvalOptions("locomo", systems=["full-context"]), engine=engine,
                       counting=counting, out=tmp_path, log=lambda _: None)
    rows = [json.loads(line) for line in (tmp_path / "questions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["answer"] == "" and "LLMError" in r["sys_errors"][0] for r in rows)
    assert summary.systems["full-context"].total.f1 == 0.0


def test_report_merges_several_runs(engine_factory, tmp_path):
    from memsif.cli import main

    for name, systems in (("a", ["full-context"]), ("b", ["naive-rag", "full-context"])):
        counting = CountingLLM(FakeLLM({"answer": "Miso", "eval_judge": {"CORRECT": 0.9, "WRONG": 0.1}}))
        run_eval([_sample()], EvalOptions("locomo", systems=systems), engine=engine_factory(llm=counting),
                 counting=counting, out=tmp_path / name, log=lambda _: None)
    assert main(["eval", "report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "r.md")]) == 0
    text = (tmp_path / "r.md").read_text()
    assert "| full-context |" in text and "| naive-rag |" in text and "| full-context (b) |" in text


def test_a_report_that_cannot_be_written_leaves_the_last_one_as_it_was(engine_factory, tmp_path, monkeypatch, capsys):
    """``eval report --out`` on a full disk: one error naming the file and the reason; the report that
    was there is unchanged and no partial file is left (``memsif.files.write_file``)."""
    import errno

    from memsif import files
    from memsif.cli import main

    counting = CountingLLM(FakeLLM({"answer": "Miso", "eval_judge": {"CORRECT": 0.9, "WRONG": 0.1}}))
    run_eval([_sample()], EvalOptions("locomo", systems=["full-context"]), engine=engine_factory(llm=counting),
             counting=counting, out=tmp_path / "a", log=lambda _: None)
    (tmp_path / "out").mkdir()
    report = tmp_path / "out" / "r.md"
    report.write_text("the last good report")

    def full(_fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    assert main(["eval", "report", str(tmp_path / "a"), "--out", str(report)]) == 2
    err = capsys.readouterr().err
    assert f"Cannot write the report {report}: No space left on device" in err and "Traceback" not in err, err
    assert [p.name for p in report.parent.iterdir()] == ["r.md"] and report.read_text() == "the last good report"

def test_report_on_common_questions_scores_every_system_on_the_same_ones(engine_factory, tmp_path):
    from memsif.cli import main

    for name, system, limit in (("a", "full-context", 1), ("b", "naive-rag", None)):
        counting = CountingLLM(FakeLLM({"answer": "Miso", "eval_judge": {"CORRECT": 0.9, "WRONG": 0.1}}))
        run_eval([_sample()], EvalOptions("locomo", systems=[system], limit=limit), engine=engine_factory(llm=counting),
                 counting=counting, out=tmp_path / name, log=lambda _: None)
    [first] = [json.loads(line) for line in (tmp_path / "a" / "questions.jsonl").read_text().splitlines()]
    everything = json.loads((tmp_path / "b" / "summary.json").read_text())["systems"]["naive-rag"]["total"]
    assert everything["n"] == 2 and everything["f1"] == 0.5
    assert main(["eval", "report", str(tmp_path / "a"), str(tmp_path / "b"), "--common-questions",
                 "--out", str(tmp_path / "r.md")]) == 0
    text = (tmp_path / "r.md").read_text()
    assert "Scores on the 1 questions every system answered" in text
    expected = f"{100 * first['f1']:.1f}"
    rag_f1 = next(line for line in text.splitlines() if line.startswith("| naive-rag |"))
    assert rag_f1.split(" | ")[-2] == expected, "naive-rag must be scored on full-context's one question only"


def test_judge_check_measures_a_judge_against_gold_and_mismatched_answers():
    from memsif.eval.results import QuestionResult
    from memsif.eval.runner import judge_check

    rows = [QuestionResult(dataset="locomo", system="memsif", label="memsif", category="S-hop", sample_id="s",
                           qid=f"q{i}", question=f"Q{i}?", gold=gold)
            for i, gold in enumerate(["Miso", "Paris", "8 May 2023", "pottery"])]

    def fair(prompt):  # CORRECT exactly when the generated answer is the gold answer
        gold = prompt.text.split("Gold answer: ")[1].split("\n")[0]
        said = prompt.text.split("Generated answer: ")[1].split("\n")[0]
        return {"CORRECT": 0.9, "WRONG": 0.1} if gold == said else {"CORRECT": 0.2, "WRONG": 0.8}

    good = judge_check(FakeLLM({"eval_judge": fair}), rows, n=10)
    assert good["questions"] == 4 and good["gold_labelled_correct"] == 1.0
    assert good["mismatched_labelled_correct"] == 0.0 and good["separation"] == 1.0
    yes_man = judge_check(FakeLLM({"eval_judge": {"CORRECT": 0.95, "WRONG": 0.05}}), rows)
    assert yes_man["mismatched_labelled_correct"] == 1.0 and yes_man["separation"] == 0.5
    with pytest.raises(ValueError, match="two questions"):
        judge_check(FakeLLM({"eval_judge": fair}), rows[:1])


def test_a_context_budget_caps_the_baselines_and_names_them(engine_factory, tmp_path):
    counting = CountingLLM(FakeLLM())
    engine = engine_factory(llm=counting, embedder=KeywordEmbedder({"cat": 0, "miso": 0}))
    runs = {}
    for budget in (None, 12):
        options = EvalOptions("locomo", systems=["naive-rag", "full-context"], generate=False, context_budget=budget)
        run_eval([_sample()], options, engine=engine, counting=counting, out=tmp_path / str(budget), log=lambda _: None)
        lines = (tmp_path / str(budget) / "questions.jsonl").read_text().splitlines()
        runs[budget] = [json.loads(line) for line in lines]
    assert {r["label"] for r in runs[12]} == {"naive-rag@12", "full-context@12"}
    assert all(0 < r["context_tokens"] <= 12 and len(r["context_ids"]) == 1 for r in runs[12])
    assert all(len(r["context_ids"]) == 6 for r in runs[None]), "without a budget the whole sample fits"
    with pytest.raises(ValueError, match="positive"):
        EvalOptions("locomo", context_budget=0)


def test_compare_reads_plain_and_gzipped_results_and_pairs_by_question(tmp_path, capsys):
    import gzip

    from memsif.cli import main

    def rows(label, f1s):
        return [{"dataset": "locomo", "label": label, "sample_id": f"conv-{i % 3}", "qid": f"q{i}", "category": "S-hop",
                 "f1": f1} for i, f1 in enumerate(f1s)]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows("memsif", [1.0] * 6)))
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(
        "\n".join(json.dumps(r) for r in rows("naive-rag", [0.5] * 6)).encode()))
    assert main(["eval", "compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--metric", "f1",
                 "--resamples", "200"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["diff"] == 0.5 and result["ci_low"] == result["ci_high"] == 0.5 and result["questions"] == 6
    assert result["resampled"] == "conversations"
    # the NCE subset: only the questions whose rows say nce
    nce = [{**r, "nce": i < 3} for i, r in enumerate(rows("memsif", [1.0, 0.0, 1.0, 0.0, 0.0, 0.0]))]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in nce))
    assert main(["eval", "compare", str(tmp_path / "c.jsonl"), str(tmp_path / "b.jsonl"), "--metric", "f1",
                 "--subset", "nce", "--resamples", "200"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["questions"] == 3 and result["subset"] == "nce" and result["diff"] == pytest.approx(2 / 3 - 0.5)


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--system", "bogus", "unknown system"), ("--ablation", "bogus", "unknown ablation"),
    ("--limit", "0", "limit must be at least 1"), ("--context-budget", "-5", "context_budget must be a positive"),
])
def test_bad_eval_options_are_clear_errors_before_any_model_loads(tmp_path, capsys, flag, value, message):
    from memsif.cli import main

    code = main(["eval", "locomo", "--data", str(_locomo_file(tmp_path)), flag, value, "--out", str(tmp_path / "o")])
    assert code == 2 and message.split(" must")[0] in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_compare_names_missing_labels_leaves_out_undefined_values_and_warns_on_one_conversation(tmp_path, capsys):
    from memsif.cli import main

    rows = [{"dataset": "locomo", "label": lab, "sample_id": "conv-1", "qid": f"q{i}", "category": "S-hop",
             "recall_text": value} for lab, values in (("memsif", [1.0, None, 0.5]), ("naive-rag", [0.5, 1.0, 0.5]))
            for i, value in enumerate(values)]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(SystemExit, match=r"no rows labelled 'MemSIF'; it holds \['memsif', 'naive-rag'\]"):
        main(["eval", "compare", f"{path}:MemSIF", f"{path}:naive-rag"])
    with pytest.raises(SystemExit, match="at least 1"):
        main(["eval", "compare", f"{path}:memsif", f"{path}:naive-rag", "--resamples", "0"])
    assert main(["eval", "compare", f"{path}:memsif", f"{path}:naive-rag", "--metric", "recall_text",
                 "--resamples", "100"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["questions"] == 2 and result["undefined_left_out"] == 1 and result["diff"] == 0.25
    assert "zero width" in result["note"] and result["ci_low"] == result["ci_high"] == 0.25
    # resampling the questions within the one conversation gives it an interval of real width
    assert main(["eval", "compare", f"{path}:memsif", f"{path}:naive-rag", "--metric", "recall_text",
                 "--resamples", "200", "--resample", "questions"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["resampled"] == "questions within conversations" and "note" not in result
    assert result["ci_low"] == 0.0 and result["ci_high"] == 0.5 and result["diff"] == 0.25
    assert result["mean_a"] == 0.75 and result["mean_b"] == 0.5


def test_synthetic_histories_for_the_scale_benchmark_are_long_ordered_and_unique():
    from memsif.eval.scale import growth, synthetic_history

    example = ROOT / "assets" / "locomo-conv-26.json"
    messages, questions = synthetic_history(1000, [str(example)])
    assert len(messages) == 1000 and len({m.id for m in messages}) == 1000
    times = [m.time for m in messages if m.time]
    assert times == sorted(times), "a copy's dates must follow the previous copy's"
    assert messages[419].id == "c1.D1:1" and questions
    rows = [{"messages": 1000, "x": 10.0}, {"messages": 2000, "x": 20.0}, {"messages": 4000, "x": 80.0}]
    assert growth(rows, "x") == ["1.00", "2.00"]


def test_the_scale_report_splits_the_build_into_its_parts():
    from memsif.eval.scale import SIM_PARTS, report, sim_parts
    from memsif.records import BoundaryRule, SegmentDecision, TrajectoryDecision

    decisions = [SegmentDecision(namespace="n", message_id=f"m{i}", message_index=i, segment_id="S1", tau_split=0.3,
                                 tau_merge=0.6, rule=BoundaryRule.JUDGE, continued=True, seconds=1.5) for i in range(2)]
    decisions.append(TrajectoryDecision(namespace="n", segment_id="S1", trajectory_id="E1", created=True, seconds=4.0))
    parts = sim_parts({"structure": 10.0, "embed_and_entities": 2.0, "store": 1.0}, decisions)
    assert parts == {"embed_and_entities": 2.0, "segment_judge": 3.0, "trajectory_decisions": 4.0,
                     "structure_rest": 3.0, "sentences": 0.0, "store": 1.0, "load_state": 0.0}
    assert tuple(parts) == SIM_PARTS
    row = {"messages": 1000, "segments": 9, "trajectories": 3, "sim_s": 16.0, "core_facts_extrapolated_s": 1.0,
           "retrieval_p50_s": 0.1, "retrieval_p95_s": 0.2, "answer_p50_s": 1.0, "answer_p95_s": 2.0, "store_mb": 1.0,
           "peak_rss_mb": 100.0, "sim_parts_s": parts, "judge_calls_segment": 2, "judge_calls_trajectory": 0}
    double = row | {"messages": 2000, "sim_parts_s": {k: 4 * v for k, v in parts.items()}}
    text = report([row, double], 8)
    assert "| 1000 | 2.0 | 3.0 (2) | 4.0 (0) | 3.0 | 0.0 | 1.0 | 0.0 |" in text
    assert "| 1000→2000 | 2.00 | 2.00 | 2.00 | 2.00 | – | 2.00 | – |" in text


def test_the_counting_wrapper_keeps_the_back_ends_batched_generation():
    from memsif.eval.systems import CountingLLM
    from memsif.llm import Generation, generate_many
    from memsif.prompts import Prompt

    class Batched:
        name = "batched"

        def __init__(self):
            self.batches: list[int] = []

        def generate(self, prompt, **kw):
            raise AssertionError("one by one although the back-end batches")

        def generate_batch(self, prompts, **kw):
            self.batches.append(len(prompts))
            return [Generation("{}", 10, 2) for _ in prompts]

        def count_tokens(self, text):
            return 1

    inner = Batched()
    counting = CountingLLM(inner)
    out = generate_many(counting, [Prompt("p", "p/1", "a"), Prompt("p", "p/1", "b")], json_schema={})
    assert [g.text for g in out] == ["{}", "{}"] and inner.batches == [2]
    assert counting.calls == 2 and counting.tokens == 24


def test_a_question_without_gold_turns_is_a_row_whose_recalls_are_left_out_of_the_means():
    from memsif.eval.results import QuestionResult
    from memsif.eval.runner import score_blocks

    common = dict(dataset="locomo", system="memsif", label="memsif", category="S-hop", sample_id="s", gold="x")
    rows = [QuestionResult(**common, qid="q1", question="Q1?", evidence_ids=["D1:1"], recall_text=1.0, recall_ids=1.0,
                           recall_strict=1.0),
            QuestionResult(**common, qid="q2", question="Q2?", recall_text=None, recall_ids=None, recall_strict=None)]
    assert QuestionResult.model_validate_json(rows[1].json_line()) == rows[1]
    total = score_blocks(rows)["total"]
    assert total.n == 2 and total.recall_ids == 1.0 and total.recall_text == 1.0


def test_only_the_listed_questions_are_asked(engine_factory, tmp_path):
    """``--questions`` (``EvalOptions.only``): a rerun of some questions, e.g. those a gate decided."""
    from memsif.cli import build_parser

    counting = CountingLLM(FakeLLM({"answer": "Miso", "eval_judge": {"CORRECT": 0.9, "WRONG": 0.1}}))
    run_eval([_sample()], EvalOptions("locomo", systems=["full-context"]), engine=engine_factory(llm=counting),
             counting=counting, out=tmp_path / "all", log=lambda _: None)
    every = [json.loads(line)["qid"] for line in (tmp_path / "all" / "questions.jsonl").read_text().splitlines()]
    assert len(every) == 2
    counting = CountingLLM(FakeLLM({"answer": "Miso", "eval_judge": {"CORRECT": 0.9, "WRONG": 0.1}}))
    run_eval([_sample()], EvalOptions("locomo", systems=["full-context"], only=frozenset([every[1]])),
             engine=engine_factory(llm=counting), counting=counting, out=tmp_path / "one", log=lambda _: None)
    asked = [json.loads(line)["qid"] for line in (tmp_path / "one" / "questions.jsonl").read_text().splitlines()]
    assert asked == [every[1]]
    assert json.loads((tmp_path / "one" / "summary.json").read_text())["only"] == [every[1]]
    args = ["eval", "locomo", "--data", "x.json", "--questions", f"{every[0]}, {every[1]}", "--out", "o"]
    assert build_parser().parse_args(args).questions == f"{every[0]}, {every[1]}"


def test_a_run_scored_by_f1_only_is_judged_afterwards_with_intervals_and_resumes(engine_factory, tmp_path,
                                                                                 monkeypatch, capsys):
    """``eval judge RUN``: the answers of a ``--judge f1`` run (rows gzipped, as committed runs are) get
    the LLM judge's verdicts; summary and report gain LLM-judge ACC with its interval, the F1 kept; a
    second call judges nothing again unless ``--again``; a retrieval-only run is refused."""
    import gzip

    import memsif.llm
    from memsif.cli import main

    counting = CountingLLM(FakeLLM({"answer": "Miso"}))
    options = EvalOptions("locomo", systems=["full-context"], judge="f1")
    run_eval([_sample(sample_id="s1"), _sample(sample_id="s2")], options, engine=engine_factory(llm=counting),
             counting=counting, out=tmp_path / "a", log=lambda _: None)
    rows = tmp_path / "a" / "questions.jsonl"
    (tmp_path / "a" / "questions.jsonl.gz").write_bytes(gzip.compress(rows.read_bytes()))
    rows.unlink()
    before = json.loads((tmp_path / "a" / "summary.json").read_text())["systems"]["full-context"]["total"]
    assert before["acc"] is None and before["f1_ci"] is not None

    def verdict(prompt):  # CORRECT only for the question whose gold the fake's answer matches
        return "CORRECT" if prompt.text.split("Gold answer: ")[1].startswith("Miso\n") else "WRONG"

    judge = FakeLLM({"eval_judge": verdict})
    monkeypatch.setattr(memsif.llm, "load_llm", lambda config: judge)
    assert main(["eval", "judge", str(tmp_path / "a")]) == 0
    assert len(judge.calls["eval_judge"]) == 4
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    total = summary["systems"]["full-context"]["total"]
    assert summary["judge"] == "both" and summary["judge_model"]["name"] == "fake-llm"
    assert total["acc"] == 0.5 and total["f1"] == before["f1"] and 0 <= total["acc_ci"][0] < 0.5 < total["acc_ci"][1]
    assert summary["systems"]["full-context"]["categories"]["S-hop"]["acc"] == 1.0
    written = [json.loads(line) for line in gzip.decompress((tmp_path / "a" / "questions.jsonl.gz").read_bytes())
               .decode().splitlines()]
    assert sorted(r["llm_correct"] for r in written) == [False, False, True, True]
    report = (tmp_path / "a" / "report.md").read_text()
    assert "## LLM-judge ACC (%)" in report and "| full-context | 100.0 | 0.0 | – | – | 50.0 | 0.0 |" in report
    spans = r"\| full-context \| \d+\.\d \[\d+\.\d, \d+\.\d\] \| 50\.0 \[\d+\.\d, \d+\.\d\] \|"
    assert re.search(spans, report), report
    assert main(["eval", "judge", str(tmp_path / "a")]) == 0 and len(judge.calls["eval_judge"]) == 4
    assert main(["eval", "judge", str(tmp_path / "a"), "--again"]) == 0 and len(judge.calls["eval_judge"]) == 8

    run_eval([_sample()], EvalOptions("locomo", systems=["full-context"], generate=False),
             engine=engine_factory(llm=counting), counting=counting, out=tmp_path / "r", log=lambda _: None)
    capsys.readouterr()
    with pytest.raises(SystemExit, match="retrieval-only run"):
        main(["eval", "judge", str(tmp_path / "r")])
    with pytest.raises(SystemExit, match="finished run"):
        main(["eval", "judge", str(tmp_path / "nothing")])


def test_runs_split_by_sample_pool_into_the_run_they_would_have_been(engine_factory, tmp_path, capsys):
    """``eval pool A B --out P``: two runs over different samples give the scores, intervals, per-category
    figures and costs of one run over both; a question answered twice, runs made differently, or an
    output folder that already holds a run are refused with nothing written; a run written before the
    message count was recorded still pools its construction cost."""
    from memsif.cli import main

    def run(samples, out, **kw):
        counting = CountingLLM(FakeLLM({"answer": "Miso", "eval_judge": {"CORRECT": 0.9, "WRONG": 0.1}}))
        return run_eval(samples, EvalOptions("locomo", systems=["full-context", "naive-rag"], **kw),
                        engine=engine_factory(llm=counting), counting=counting, out=tmp_path / out, log=lambda _: None)

    both = run([_sample(sample_id="s1"), _sample(n=5, sample_id="s2")], "both")
    run([_sample(sample_id="s1")], "a")
    run([_sample(n=5, sample_id="s2")], "b")
    assert main(["eval", "pool", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "p")]) == 0
    pooled = json.loads((tmp_path / "p" / "summary.json").read_text())
    expected = json.loads(both.model_dump_json())
    for label in ("full-context", "naive-rag"):
        mine, want = pooled["systems"][label], expected["systems"][label]
        assert (mine["total"], mine["categories"], mine["nce"]) == (want["total"], want["categories"], want["nce"])
        for name in ("questions", "build_llm_calls", "build_messages", "query_tokens_mean", "context_tokens_mean"):
            assert mine["cost"][name] == want["cost"][name], name
    assert pooled["systems"]["full-context"]["cost"]["build_messages"] == 11
    assert pooled["diagnostics"]["samples"] == 2 and pooled["judge"] == "both"
    rows = (tmp_path / "p" / "questions.jsonl").read_text().splitlines()
    assert len(rows) == 8 and (tmp_path / "p" / "report.md").read_text().startswith("#")

    capsys.readouterr()
    with pytest.raises(SystemExit, match="already holds a run"):
        main(["eval", "pool", str(tmp_path / "a"), "--out", str(tmp_path / "p")])
    with pytest.raises(SystemExit, match=r"answered s1/q\d in two of the runs"):
        main(["eval", "pool", str(tmp_path / "a"), str(tmp_path / "both"), "--out", str(tmp_path / "q")])
    run([_sample(n=5, sample_id="s2")], "c", judge="f1", limit=1)
    with pytest.raises(SystemExit, match="differ in limit"):
        main(["eval", "pool", str(tmp_path / "a"), str(tmp_path / "c"), "--out", str(tmp_path / "q")])
    assert not (tmp_path / "q").exists()

    old = json.loads((tmp_path / "b" / "summary.json").read_text())   # as written before build_messages existed
    for figures in old["systems"].values():
        figures["cost"].pop("build_messages")
        figures["cost"].update(build_llm_calls=10, llm_calls_per_message=2.0)
    (tmp_path / "b" / "summary.json").write_text(json.dumps({**old, "judge_model": {"name": "judge-llm"}}))
    a = json.loads((tmp_path / "a" / "summary.json").read_text())
    (tmp_path / "a" / "summary.json").write_text(json.dumps({**a, "judge_model": {"name": "judge-llm"}}))
    assert main(["eval", "pool", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "o")]) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["judge_model"] == {"name": "judge-llm"}, "one judge judged both runs: the pooled run names it"
    cost = summary["systems"]["naive-rag"]["cost"]
    assert cost["build_messages"] == 6 + 5 and cost["build_llm_calls"] == 10 and cost["llm_calls_per_message"] == 0.909


def test_the_ablation_without_corefacts_builds_none_and_a_later_run_extracts_them(engine_factory):
    facts = {"facts": [{"subject": "Ann", "type": "Preference", "statement": "Ann has a cat named Miso.",
                        "sources": [1]}]}
    counting = CountingLLM(FakeLLM({"segment_judge": 0.9, "trajectory_judge": 0.9, "core_extract": json.dumps(facts),
                                    "core_operation": "A"}))
    engine = engine_factory(llm=counting, core_facts=True)
    without = MemSIFSystem(engine, counting, "t", ablation="no-cf")
    without.build(_sample())
    assert engine.facts(without.namespace) == [] and engine.facts(without.base_namespace(_sample())) == []
    full = MemSIFSystem(engine, counting, "t")
    cost = full.build(_sample())
    assert not cost.reused and [f.statement for f in engine.facts(full.namespace)] == ["Ann has a cat named Miso."]
