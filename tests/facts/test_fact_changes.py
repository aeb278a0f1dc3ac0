"""A newer CoreFact that changes an earlier one (§3.3): candidates by subject and attribute key, the focused
yes/no change question, SUPERSEDE on a later day and UPDATE on the same day, the history on the page and in
answers about the past, with a fake LLM keyed by prompt name."""

import json
from datetime import datetime

import pytest

from memsif.answer.retrieval import asks_about_the_past
from memsif.facts.changes import KEY_MIN_COSINE, ChangeCandidate, ask_change, change_candidates, change_threshold
from memsif.llm.profiles import profile_of
from memsif.prompts import core_change, core_extract
from memsif.records import CoreFact, FactOp, Message, parse_schema
from memsif.viz import FACT_COLUMNS, fact_chain, fact_rows, op_rows
from tests.fakes import FakeLLM, KeywordEmbedder

APRIL, MAY, AUGUST = datetime(2023, 4, 2, 9, 0), datetime(2023, 5, 8, 13, 56), datetime(2023, 8, 14, 10, 0)
CFG = dict(core_facts=True, tau_split=0.0, tau_merge=0.01, sem_mapping="affine", trajectory_min_phi=1.0,
           fact_change="model")


def msg(mid: str, text: str, when: datetime, speaker: str = "James") -> Message:
    return Message(id=mid, namespace="t", speaker=speaker, text=text, time=when, session_id=mid.split(":")[0])


def extraction(facts_by_phrase: dict[str, list[dict]]):
    def reply(prompt):
        return json.dumps({"facts": [f for phrase, fs in facts_by_phrase.items() if phrase in prompt.text for f in fs]})
    return reply


DOGS = {
    "two dogs": [{"subject": "James", "about": "dogs", "type": "Identity",
                  "statement": "James has two dogs, Max and Daisy.", "sources": [1]}],
    "adopted Ned": [{"subject": "James", "about": "pets", "type": "Event",
                     "statement": "James adopted Ned, a pup from the shelter.", "sources": [1]}],
    "game studio": [{"subject": "James", "about": "job", "type": "Event",
                     "statement": "James started work at a game studio.", "sources": [1]}],
}
# "dogs" and "pets" share a keyword dimension (their keys are close); "job" does not.
EMBEDDER = {"dog": 0, "pets": 0, "job": 1, "studio": 1}


def change_llm(p_change: float) -> FakeLLM:
    return FakeLLM({"core_extract": extraction(DOGS), "core_change": p_change, "fact_verify": 0.9})


def test_a_change_said_in_other_words_on_a_later_day_supersedes_and_keeps_history(engine_factory):
    llm = change_llm(0.9)
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder(EMBEDDER), **CFG)
    engine.ingest([msg("D1:1", "I have two dogs, Max and Daisy.", APRIL)])
    report = engine.ingest([msg("D5:1", "Big news: I adopted Ned, a pup from the shelter!", MAY)])
    assert report.fact_ops == {"SUPERSEDE": 1}
    [current] = engine.facts("t")
    assert current.statement == "James adopted Ned, a pup from the shelter." and current.attribute == "pets"
    old = next(f for f in engine.facts("t", history=True) if f.id == "F1")
    assert old.status == "superseded" and old.superseded_by == current.id and old.valid_until == MAY
    op = engine.fact_log("t", op="SUPERSEDE")[0]
    assert op.decided_by == "llm" and op.prompt_version == core_change.version()
    assert op.scores.change == {"F1": 0.9} and op.scores.change_min_p == 0.5 and "F1" in op.scores.key_cosine
    assert "'dogs' → 'pets'" in op.reason and "0.90 ≥ 0.50" in op.reason
    asked = llm.calls["core_change"]  # each wording of the question once
    assert [a.version for a in asked] == [f"core_change/1:{q}" for q in core_change.CHANGE]
    assert "Earlier (2 April 2023): James has two dogs" in asked[0].text and "Later (8 May 2023)" in asked[0].text
    assert asked[0].input_ids == ("F1",)


def test_below_the_threshold_both_stay_current(engine_factory):
    engine = engine_factory(llm=change_llm(0.2), embedder=KeywordEmbedder(EMBEDDER), **CFG)
    engine.ingest([msg("D1:1", "I have two dogs, Max and Daisy.", APRIL)])
    report = engine.ingest([msg("D5:1", "Big news: I adopted Ned, a pup from the shelter!", MAY)])
    assert report.fact_ops == {"ADD": 1} and len(engine.facts("t")) == 2
    op = engine.fact_log("t")[-1]
    assert op.decided_by == "llm" and op.scores.change == {"F1": 0.2} and "no earlier fact changed" in op.reason


def test_another_attribute_is_not_asked_about(engine_factory):
    llm = change_llm(0.99)
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder(EMBEDDER), **CFG)
    engine.ingest([msg("D1:1", "I have two dogs, Max and Daisy.", APRIL)])
    report = engine.ingest([msg("D5:1", "I started work at a game studio.", MAY)])
    assert report.fact_ops == {"ADD": 1} and "core_change" not in llm.calls
    assert engine.fact_log("t")[-1].decided_by == "rule"


def test_facts_of_one_day_are_never_changes_of_one_another(engine_factory):
    llm = change_llm(0.99)
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder(EMBEDDER), **CFG)
    engine.ingest([msg("D1:1", "I have two dogs, Max and Daisy.", APRIL),
                   msg("D1:2", "And today I adopted Ned, a pup from the shelter!", APRIL.replace(hour=10))])
    assert [o.op for o in engine.fact_log("t")] == [FactOp.ADD, FactOp.ADD] and "core_change" not in llm.calls


def test_a_persons_correction_is_never_changed_by_extraction(engine_factory):
    llm = change_llm(0.99)
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder(EMBEDDER), **CFG)
    engine.ingest([msg("D1:1", "I have two dogs, Max and Daisy.", APRIL)])
    engine.edit_fact("t", "F1", statement="James has two dogs, Max and Daisy, both rescues.")
    report = engine.ingest([msg("D5:1", "Big news: I adopted Ned, a pup from the shelter!", MAY)])
    assert report.fact_ops == {"ADD": 1}
    corrected = next(f for f in engine.facts("t") if f.corrected)
    assert corrected.status == "current" and corrected.statement.endswith("both rescues.")


def fact(fid: str, statement: str, when: datetime, attribute: str = "", subject: str = "James", **kw) -> CoreFact:
    return CoreFact(id=fid, namespace="t", subject=subject, type="Identity", statement=statement, attribute=attribute,
                    event_time=when, valid_from=when, source_message_ids=[f"{fid}:m"], **kw)


def test_candidates_are_the_same_subjects_earlier_facts_with_a_close_key_or_statement():
    embed = KeywordEmbedder(EMBEDDER)
    facts = [fact("F1", "James has two dogs.", APRIL, "dogs"), fact("F2", "James works at a bank.", APRIL, "job"),
             fact("F3", "John has a dog.", APRIL, "dogs", subject="John"),
             fact("F4", "James walks his dog daily.", AUGUST, "dogs"),
             fact("F5", "James has a dog, Rex.", APRIL, "dogs", corrected=True)]
    new = fact("", "James adopted Ned.", MAY, "pets")
    vectors = dict(zip([f.id for f in facts], embed.embed_documents([f.statement for f in facts]), strict=True))
    found = change_candidates(new, embed.embed_documents([new.statement])[0], embed.embed_documents(["pets"])[0],
                              facts, vectors.__getitem__, lambda f: embed.embed_documents([f.attribute])[0])
    # F2: another key and statement; F3: another person; F4: said later; F5: a person's correction
    assert [c.fact.id for c in found] == ["F1"] and found[0].key_cosine >= KEY_MIN_COSINE


def test_the_best_candidate_at_or_above_the_threshold_is_changed():
    old = [fact("F1", "James has two dogs.", APRIL, "dogs"), fact("F2", "James likes dogs.", APRIL, "dogs")]
    new = fact("", "James adopted Ned.", MAY, "pets")
    found = [ChangeCandidate(f, 0.8, 0.6, False) for f in old]
    llm = FakeLLM({"core_change": lambda p: 0.7 if "two dogs" in p.text else 0.4})
    verdict = ask_change(llm, 0.6, new, found)
    assert verdict.changed is old[0] and verdict.op == FactOp.SUPERSEDE and verdict.p_yes == {"F1": 0.7, "F2": 0.4}
    assert ask_change(llm, 0.75, new, found).changed is None


def test_the_extractor_is_asked_for_each_facts_attribute_key():
    prompt = core_extract.build([("8 May 2023", "James", "I adopted Ned.")], parse_schema(""))
    assert '"about": "job"' in prompt.text and "about (what of their life" in prompt.text
    grammar = core_extract.grammar(core_extract.response_schema(parse_schema("")))
    assert "about" in grammar["$defs"]["ExtractedFact"]["required"]
    # a reply without keys (an older model's, a test's) is read with an empty key
    reply = core_extract.response_schema(parse_schema("")).model_validate(
        {"facts": [{"subject": "James", "type": "Event", "statement": "James adopted Ned.", "sources": [1]}]})
    assert reply.facts[0].about == ""


def test_the_page_shows_each_facts_chain_and_the_change_before_and_after(engine_factory):
    engine = engine_factory(llm=change_llm(0.9), embedder=KeywordEmbedder(EMBEDDER), **CFG)
    engine.ingest([msg("D1:1", "I have two dogs, Max and Daisy.", APRIL)])
    engine.ingest([msg("D5:1", "Big news: I adopted Ned, a pup from the shelter!", MAY)])
    rows = {r[0]: dict(zip(FACT_COLUMNS, r, strict=True)) for r in fact_rows(engine.facts("t", history=True))}
    assert rows["F1"]["status"] == "superseded by F2; about dogs; held 2023-04-02 – 2023-05-08; F1 → F2 (current)"
    assert rows["F2"]["status"] == "current; about pets; held from 2023-05-08; F1 → F2 (current)"
    [sup] = [r for r in op_rows(engine.fact_log("t")) if r[1] == "SUPERSEDE"]
    assert sup[2] == "F1 → F2: James has two dogs, Max and Daisy. → James adopted Ned, a pup from the shelter."


def test_a_chain_of_three_versions_reads_oldest_first():
    a = fact("F1", "a", APRIL, status="superseded", superseded_by="F4")
    b = fact("F4", "b", MAY, status="superseded", superseded_by="F7")
    c = fact("F7", "c", AUGUST)
    by_id = {f.id: f for f in (a, b, c)}
    assert fact_chain(b, by_id) == "F1 → F4 → F7 (current)" and fact_chain(fact("F9", "d", MAY), by_id) == ""


def test_a_question_about_now_sees_current_facts_and_one_about_the_past_the_history_marked(engine_factory):
    engine = engine_factory(llm=change_llm(0.9), embedder=KeywordEmbedder(EMBEDDER), **CFG)
    engine.ingest([msg("D1:1", "I have two dogs, Max and Daisy.", APRIL)])
    engine.ingest([msg("D5:1", "Big news: I adopted Ned, a pup from the shelter!", MAY)])
    now = engine.ask("How many dogs does James have?", namespace="t", generate=False)
    assert not now.history and [f.id for f in now.facts_used if f.kind == "core"] == ["F2"]
    past = engine.ask("How many dogs did James have before?", namespace="t", generate=False)
    assert past.history and {f.id for f in past.facts_used if f.kind == "core"} == {"F1", "F2"}
    assert "James has two dogs, Max and Daisy. (2 April 2023) [an earlier state: no longer true after 8 May 2023]" \
        in past.context


def test_questions_about_the_past_are_told_from_questions_about_now():
    assert asks_about_the_past("What pet did Melanie have before?")
    assert asks_about_the_past("Where did Jon use to work?")
    assert asks_about_the_past("Does John still play drums anymore?")
    assert not asks_about_the_past("How many dogs does James have now?")
    assert not asks_about_the_past("When did Caroline go to the parade?")


def test_the_same_fact_said_again_is_merged_not_superseded():
    old = fact("F1", "James has two dogs, Max and Daisy.", APRIL, "dogs")
    new = fact("", "James has two dogs, Max and Daisy!", MAY, "dogs")
    llm = FakeLLM({"core_change": 0.9})
    verdict = ask_change(llm, 0.5, new, [ChangeCandidate(old, 1.0, 0.95, False)])
    assert verdict.op == FactOp.MERGE and "said again" in verdict.reason
    other = fact("", "James has three dogs, Max, Daisy and Ned.", MAY, "dogs")
    assert ask_change(llm, 0.5, other, [ChangeCandidate(old, 1.0, 0.95, False)]).op == FactOp.SUPERSEDE


def test_a_memory_built_before_facts_had_keys_is_read_as_it_was(engine_factory):
    stored = {"id": "F1", "namespace": "t", "subject": "James", "type": "Identity",
              "statement": "James has two dogs, Max and Daisy.", "event_time": "2023-04-02T09:00:00",
              "source_message_ids": ["D1:1"], "status": "current"}
    old = CoreFact.model_validate(stored)
    assert old.attribute == "" and old.model_dump(exclude={"attribute"}, exclude_defaults=True).keys() <= stored.keys()
    # without a key, its statement stands for it when a newer fact's key is compared
    from memsif.facts.changes import key_text
    assert key_text(old) == old.statement and key_text(fact("F2", "x", MAY, "dogs")) == "dogs"


@pytest.mark.parametrize(("name", "mode", "threshold"), [
    ("Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged, llama.cpp)", "auto", None),  # measured, not trusted
    ("Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged, llama.cpp)", "model", 0.6),
    ("Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged, llama.cpp)", "off", None),
    ("some-unmeasured-model", "auto", None),
    ("some-unmeasured-model", "model", 0.5),
])
def test_the_change_question_is_asked_by_default_only_of_a_model_whose_changes_were_labelled_right(name, mode,
                                                                                                   threshold):
    llm = FakeLLM({})
    llm.name = name
    assert change_threshold(mode, llm, profile_of(name)) == threshold
