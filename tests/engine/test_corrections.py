"""A person's corrections of the Dual-Track Fact Memory (EDIT, DELETE, RESTORE): operations in the
CoreFact log, out of every answer, and standing against later extractions. Fakes for the models."""

import json
from datetime import datetime
from pathlib import Path

import pytest

from memsif import cli
from memsif.errors import MemSIFError, NotFoundError, StoreError
from memsif.facts.active import Observed, Thresholds, accumulate
from memsif.facts.corrections import CorrectionError
from memsif.records import ActiveFact, Evidence
from tests.facts.test_core_facts import AUGUST, CFG, MAY, extraction, msg
from tests.fakes import FakeLLM, KeywordEmbedder

SUSHI = {"I love sushi": [{"subject": "Melanie", "type": "Preference", "statement": "Melanie loves sushi.",
                           "sources": [1]}],
         "salmon": [{"subject": "Melanie", "type": "Preference",
                     "statement": "Melanie loves sushi, salmon nigiri most of all.", "sources": [1]}],
         "dog named Max": [{"subject": "Melanie", "type": "Relation", "statement": "Melanie has a dog named Max.",
                            "sources": [1]}]}


@pytest.fixture
def sushi(engine_factory):
    """A memory with one CoreFact, F1 "Melanie loves sushi." (from D1:1)."""
    llm = FakeLLM({"core_extract": extraction(SUSHI), "core_operation": "B"})  # B = update the known fact
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"sushi": 0}), **CFG)
    engine.ingest([msg("D1:1", "I love sushi, it's my favourite food!", MAY)])
    assert [f.statement for f in engine.facts("t")] == ["Melanie loves sushi."]
    return engine


def test_an_edit_supersedes_the_fact_as_the_persons_operation_with_the_previous_value(sushi):
    op = sushi.edit_fact("t", "f1", statement="Melanie loves ramen.", type="preference",
                         when=datetime(2023, 5, 9))
    assert op.op == "EDIT" and op.decided_by == "person" and op.fact_ids == ["F1", "F2"]
    assert "'Melanie loves sushi.' → 'Melanie loves ramen.'" in op.reason
    assert op.before[0].statement == "Melanie loves sushi."
    [current] = sushi.facts("t")
    assert (current.id, current.statement, current.corrected, current.verified) == ("F2", "Melanie loves ramen.",
                                                                                    True, True)
    assert current.event_time == datetime(2023, 5, 9) and current.source_message_ids == ["D1:1"]
    old = next(f for f in sushi.facts("t", history=True) if f.id == "F1")
    assert old.status == "superseded" and old.superseded_by == "F2"
    assert [o.op for o in sushi.fact_log("t")] == ["ADD", "EDIT"]


def test_a_deleted_fact_leaves_the_answer_context_and_a_restored_one_returns(sushi):
    assert [f.id for f in sushi.ask("What food does Melanie love?", namespace="t", generate=False).facts_used] == ["F1"]
    op = sushi.delete_fact("t", "F1")
    assert op.op == "DELETE" and op.decided_by == "person" and op.after[0].status == "deleted"
    assert sushi.facts("t") == []
    assert [f.status for f in sushi.facts("t", history=True)] == ["deleted"]
    answer = sushi.ask("What food does Melanie love?", namespace="t", generate=False)
    assert answer.facts_used == [] and "Facts:" not in answer.context
    restored = sushi.restore_fact("t", "F1")
    assert restored.op == "RESTORE" and [f.id for f in sushi.facts("t")] == ["F1"]
    assert [o.op for o in sushi.fact_log("t")] == ["ADD", "DELETE", "RESTORE"]


@pytest.mark.parametrize(("call", "error", "said"), [
    (lambda e: e.edit_fact("t", "F9", statement="x"), NotFoundError, "No CoreFact 'F9' in this memory (current"),
    (lambda e: e.edit_fact("t", "F1", statement="Melanie loves sushi."), CorrectionError, "nothing to change"),
    (lambda e: e.edit_fact("t", "F1", statement="  "), CorrectionError, "the new statement is empty"),
    (lambda e: e.edit_fact("t", "F1", statement="\u200b\u200b\ufeff\u2060"), CorrectionError,
     "the new statement is empty (no visible text: only blanks or invisible characters)"),
    (lambda e: e.edit_fact("t", "F1", statement="Melanie loves sushi. " * 5000), CorrectionError,
     "the new statement is 104,999 characters; a CoreFact holds one fact of at most 160: shorten it"),
    (lambda e: e.edit_fact("t", "F1", subject="\u200d "), CorrectionError, "the new subject is empty (no visible"),
    (lambda e: e.edit_fact("t", "F1", subject="Melanie and her whole family"), CorrectionError,
     "has 5 words; a subject names one person or thing in at most 4"),
    (lambda e: e.edit_fact("t", "F1", type="Hobby"), CorrectionError, "unknown type 'Hobby': use one of"),
    (lambda e: e.restore_fact("t", "F1"), CorrectionError, "F1 is current, not deleted"),
    (lambda e: e.delete_fact("t", "A4"), NotFoundError, "No ActiveFact 'A4'"),
    (lambda e: e.delete_fact("nobody", "F1"), NotFoundError, "No memory in namespace 'nobody'"),
])
def test_a_correction_that_cannot_be_made_says_why_and_changes_nothing(sushi, call, error, said):
    with pytest.raises(error, match=None) as raised:
        call(sushi)
    assert said in str(raised.value)
    assert [f.statement for f in sushi.facts("t", history=True)] == ["Melanie loves sushi."]
    assert [o.op for o in sushi.fact_log("t")] == ["ADD"]


def test_a_deleted_fact_cannot_be_edited_until_restored(sushi):
    sushi.delete_fact("t", "F1")
    with pytest.raises(CorrectionError, match=r"F1 is deleted: only a current fact can be edited \(restore it"):
        sushi.edit_fact("t", "F1", statement="Melanie loves ramen.")


def test_a_read_only_store_and_a_busy_namespace_refuse_a_correction(sushi, monkeypatch):
    monkeypatch.setattr(sushi.store, "read_only", True, raising=False)
    with pytest.raises(StoreError, match="read-only"):
        sushi.delete_fact("t", "F1")
    monkeypatch.setattr(sushi.store, "read_only", False, raising=False)
    monkeypatch.setattr("memsif.engine.editing.LOCK_WAIT_S", 0.05)
    import threading

    held, release = threading.Event(), threading.Event()

    def build():  # another thread holds the namespace as a build does
        with sushi.lock("t"):
            held.set()
            release.wait(5)
    worker = threading.Thread(target=build)
    worker.start()
    held.wait(5)
    try:
        with pytest.raises(MemSIFError, match="is being built"):
            sushi.delete_fact("t", "F1")
    finally:
        release.set()
        worker.join()
    assert [f.status for f in sushi.facts("t", history=True)] == ["current"]


def test_a_later_extraction_does_not_bring_back_what_a_person_deleted(sushi):
    sushi.delete_fact("t", "F1")
    report = sushi.ingest([msg("D2:1", "Honestly, I love sushi more every week", AUGUST)])
    assert report.fact_ops == {"REJECT": 1}
    reject = sushi.fact_log("t")[-1]
    assert reject.candidate.statement == "Melanie loves sushi."
    assert "a person deleted F1 ('Melanie loves sushi.'); this candidate says the same" in reject.reason
    assert sushi.facts("t") == []


def test_a_later_extraction_neither_repeats_nor_changes_what_a_person_corrected(sushi, engine_factory):
    sushi.edit_fact("t", "F1", statement="Melanie loves ramen.")
    repeat = sushi.ingest([msg("D2:1", "Honestly, I love sushi more every week", AUGUST)])
    assert repeat.fact_ops == {"REJECT": 1}
    said = sushi.fact_log("t")[-1].reason
    assert "a person corrected F1 ('Melanie loves sushi.') to F2 ('Melanie loves ramen.')" in said
    # a candidate unlike what the edit replaced, which the model would make an Update of the corrected fact
    llm = FakeLLM({"core_extract": extraction(SUSHI), "core_operation": "B"})
    engine = engine_factory(llm=llm, embedder=KeywordEmbedder({"sushi": 0, "nigiri": 1}), **CFG)
    engine.ingest([msg("D1:1", "I love sushi, it's my favourite food!", MAY)])
    engine.edit_fact("t", "F1", statement="Melanie loves nigiri.")
    update = engine.ingest([msg("D2:1", "I love sushi, salmon nigiri most of all", AUGUST)])
    assert update.fact_ops == {"REJECT": 2}  # "Melanie loves sushi." again, and the Update
    first, second = (op.reason for op in engine.fact_log("t")[-2:])
    assert first.startswith("a person corrected F1 ('Melanie loves sushi.') to F2")
    assert "UPDATE of F2 refused: a person wrote it ('Melanie loves nigiri.')" in second and "LLM chose B" in second
    assert [f.statement for f in engine.facts("t")] == ["Melanie loves nigiri."]


def test_ingesting_the_same_transcript_again_leaves_every_correction_in_place(sushi):
    sushi.edit_fact("t", "F1", statement="Melanie loves ramen.")
    again = sushi.ingest([msg("D1:1", "I love sushi, it's my favourite food!", MAY)])
    sushi.build_core_facts("t")
    assert again.messages == 0
    [current] = sushi.facts("t")
    assert (current.id, current.statement, current.corrected) == ("F2", "Melanie loves ramen.", True)


def _active(aid: str = "A1", status: str = "current") -> ActiveFact:
    now = datetime(2024, 1, 1)
    return ActiveFact(id=aid, namespace="t", subject="melanie: sushi", statement="Melanie loves sushi.",
                      source_message_ids=["D1:1"], cluster_id="C1", score_src=1.0, score_qry=1.0, promoted_at=now,
                      updated_at=now, status=status)


def test_an_active_fact_is_deleted_and_restored_and_a_deleted_one_is_not_promoted_again(sushi):
    vector = sushi.embedder.embed_documents(["Melanie loves sushi."])[0]
    sushi.store.put_active_facts("t", [(_active(), vector)])
    assert sushi.delete_fact("t", "a1").op == "DELETE"
    assert sushi.active_facts("t") == [] and [a.status for a in sushi.active_facts("t", deleted=True)] == ["deleted"]
    assert sushi.store.search_active_facts("t", vector, 5) == []
    assert sushi.fact_log("t")[-1].reason == "a person deleted ActiveFact A1 ('Melanie loves sushi.')"
    sushi.restore_fact("t", "A1")
    assert [a.id for a, _ in sushi.store.search_active_facts("t", vector, 5)] == ["A1"]
    cluster = sushi.store.clusters("t")  # none yet: accumulate opens C1, which the deleted A1 belongs to
    evidence = Evidence(statement="I love sushi.", subject="Melanie", source_message_ids=["D1:1"])
    done = accumulate(cluster, [_active(status="deleted")], [Observed(evidence, vector, [])] * 3, "sushi?", vector,
                      Thresholds(0.0, 0.0, 0.0), datetime(2024, 2, 1), "t")
    assert done.clusters and done.clusters[0].id == "C1"
    done.clusters[0].active_fact_id = "A1"
    again = accumulate(done.clusters, [_active(status="deleted")], [Observed(evidence, vector, [])], "sushi?", vector,
                       Thresholds(0.0, 0.0, 0.0), datetime(2024, 2, 2), "t")
    assert again.active_facts == []  # its cluster grew, and A1 stays deleted


@pytest.mark.parametrize(("argv", "printed"), [
    (["edit", "F1", "--statement", "Melanie loves ramen.", "--when", "2023-05-09"],
     "EDIT F1, F2 (#1): a person corrected F1"),
    (["delete", "F1"], "DELETE F1 (#1): a person deleted F1"),
])
def test_the_command_line_corrects_a_fact_and_lists_it(sushi, monkeypatch, capsys, argv, printed):
    monkeypatch.setattr(cli, "_engine", lambda args, reader=False, **_: sushi)
    assert cli.main(["facts", *argv, "--namespace", "t"]) == 0
    assert printed in capsys.readouterr().out
    assert cli.main(["facts", "--namespace", "t", "--history", "--log"]) == 0
    listed = capsys.readouterr().out
    assert ("(corrected by a person)" in listed) == (argv[0] == "edit")
    assert ("[deleted by a person on" in listed) == (argv[0] == "delete")
    assert " person " in listed  # the log names who decided


@pytest.mark.parametrize(("argv", "printed"), [
    (["facts", "edit", "--namespace", "t", "F1", "--statement", "Melanie loves ramen."], "EDIT F1, F2 (#1)"),
    (["facts", "delete", "--namespace", "t", "F1"], "DELETE F1 (#1)"),
    (["facts", "--namespace", "t", "delete", "F1"], "DELETE F1 (#1)"),
])
def test_the_command_line_takes_the_fact_id_after_the_options_as_the_readme_writes_it(sushi, monkeypatch, capsys,
                                                                                      argv, printed):
    monkeypatch.setattr(cli, "_engine", lambda args, reader=False, **_: sushi)
    assert cli.main(argv) == 0
    assert printed in capsys.readouterr().out


@pytest.mark.parametrize("written", ["melanie", "Melanie\u200b", " MELANIE ", "Mela\u00adnie"])
def test_a_subject_that_names_a_speaker_takes_the_speakers_spelling_so_the_fact_stays_that_persons(sushi, written):
    """A subject typed in another case, with a zero-width space or a soft hyphen is the same person: the new
    version is stored under the speaker's spelling, and a subject filter finds it."""
    sushi.edit_fact("t", "F1", statement="Melanie loves ramen.", subject=written)
    [current] = sushi.facts("t")
    assert current.subject == "Melanie" and current.statement == "Melanie loves ramen."
    assert [o.op for o in sushi.fact_log("t", subject="Melanie")] == ["ADD", "EDIT"]
    sushi.edit_fact("t", current.id, subject="Caroline\u200b")  # not a speaker: kept as written, visibly
    assert sushi.facts("t")[0].subject == "Caroline"


def test_the_page_refuses_an_invisible_or_overlong_correction_with_why_and_keeps_the_fact(sushi):
    from memsif.inspector.common import Inspector
    from memsif.inspector.corefacts import CoreFactsTab

    tab = CoreFactsTab(Inspector(sushi))
    for statement, said in (("\u200b\u200c", "no visible text"), ("x" * 400, "400 characters")):
        done, *_ = tab.save_fact("t", None, "F1", "Preference", "Melanie", "", statement, None, None)
        assert said in done, done
    assert [f.statement for f in sushi.facts("t", history=True)] == ["Melanie loves sushi."]


@pytest.mark.parametrize(("argv", "said"), [
    (["edit", "F9", "--statement", "x"], "No CoreFact 'F9'"),
    (["delete"], "facts delete needs the fact's id"),
    (["delete", "F1", "--statement", "x"], "--statement belong to 'facts edit'"),
    (["edit", "F1", "--when", "someday"], "--when 'someday' is not a date"),
    (["edit", "F1", "--statement", "\u200b"], "the new statement is empty (no visible text"),
])
def test_the_command_line_refuses_a_correction_with_what_to_do(sushi, monkeypatch, capsys, argv, said):
    monkeypatch.setattr(cli, "_engine", lambda args, reader=False, **_: sushi)
    assert cli.main(["facts", *argv, "--namespace", "t"]) == 2
    assert said in capsys.readouterr().err
    assert [o.op for o in sushi.fact_log("t")] == ["ADD"]


def test_facts_json_keeps_its_shape_with_the_corrections(sushi, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_engine", lambda args, reader=False, **_: sushi)
    sushi.edit_fact("t", "F1", subject="Mel")
    assert cli.main(["facts", "--namespace", "t", "--json", "--log"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"namespace", "facts", "operations"}
    assert out["facts"][0]["subject"] == "Mel" and out["operations"][-1]["decided_by"] == "person"


PUPPY = ["I adopted a beagle puppy named Max last week.", "Congrats! How is Max settling in?",
         "He chews everything, my shoes included.", "Switching topics, my tax return is due on Friday.",
         "Did you file the forms for your freelance income?"]


def test_search_finds_a_message_by_a_rare_word_and_by_a_paraphrase_and_places_it(engine_factory):
    from memsif.embed import SentenceTransformerEmbedder
    from tests.conftest import make_messages

    engine = engine_factory(embedder=SentenceTransformerEmbedder(), tau_split=0.0, tau_merge=0.01,
                            sem_mapping="affine")
    engine.ingest(make_messages(PUPPY))
    [by_word] = [f for f in engine.search("t", "beagle") if f.kind == "message"][:1]
    assert by_word.id == "D1:1" and "lexical" in by_word.found_by and by_word.text == PUPPY[0]
    assert by_word.segment_id and by_word.time == datetime(2023, 5, 8) and by_word.speaker == "A"
    by_meaning = [f for f in engine.search("t", "the dog destroys footwear") if f.kind == "message"]
    assert by_meaning[0].id == "D1:3" and by_meaning[0].found_by == ["dense"]
    with pytest.raises(MemSIFError, match="search needs words"):
        engine.search("t", "  ")


def test_the_pages_correction_fields_edit_delete_and_restore_and_refuse_with_the_reason(sushi):
    from memsif.inspector.common import Inspector
    from memsif.inspector.corefacts import CoreFactsTab
    from memsif.viz import FACT_COLUMNS

    tab = CoreFactsTab(Inspector(sushi))
    said, now_id, facts, ops = tab.save_fact("t", None, "F1", "Preference", "Melanie", "2023-05-08",
                                             "Melanie loves ramen.", None, None)
    assert said.startswith("**EDIT** F1, F2: a person corrected F1") and now_id == "F2"
    status = FACT_COLUMNS.index("status")
    assert [r[status].split(";")[0] for r in facts] == ["superseded by F2", "current (corrected by a person)"]
    assert all(r[status].endswith("; F1 → F2 (current)") for r in facts)
    assert ops[-1][1:4] == ["EDIT", "F1, F2", "person"]
    said, *_ = tab.save_fact("t", None, "F2", "Preference", "Melanie", "2023-05-08", "Melanie loves ramen.", None, None)
    assert said.startswith("Not changed: nothing to change")
    said, now_id, facts, _ = tab.delete_fact("t", None, "F2", None, None)
    assert said.startswith("**DELETE** F2")
    assert facts[-1][status].startswith("deleted by a person (corrected by a person)")
    said, *_ = tab.save_fact("t", None, "F2", "Preference", "Melanie", "2023-05-09", "x", None, None)
    assert said.startswith("Not changed: F2 is deleted")
    said, *_ = tab.restore_fact("t", None, "F2", "DELETE", None)
    assert said.startswith("**RESTORE** F2")
    assert tab.restore_fact("t", None, "", None, None)[0] == "Select a fact in the table first."


def test_the_search_tab_lists_facts_and_messages_and_opens_a_message_where_it_sits(sushi):
    from types import SimpleNamespace

    from memsif.inspector.common import Inspector
    from memsif.inspector.search import SearchTab

    tab = SearchTab(Inspector(sushi))
    said, rows, _, _ = tab.search("t", None, "sushi")
    assert said.startswith("1 fact and 1 message for **sushi**")
    assert [r[:2] for r in rows] == [["CoreFact", "F1"], ["message", "D1:1"]]
    assert rows[1][2] == "2023-05-08" and rows[1][3] == "Melanie" and "lexical" in rows[1][6]
    place, figure = tab.open_found("t", None, SimpleNamespace(index=[1, 0], row_value=rows[1]))
    assert "**`D1:1`** — Melanie" in place and "Topical Segment **S1**" in place and figure is not None
    assert tab.search("t", None, " ")[0].startswith("search needs words")
    assert tab.search(None, None, "sushi")[0].startswith("No memory yet")


def test_the_page_downloads_a_memory_and_restores_it_with_its_corrections(sushi, tmp_path):
    from memsif.inspector.build import BuildTab, list_samples
    from memsif.inspector.common import BuiltSource, Inspector

    sushi.edit_fact("t", "F1", statement="Melanie loves ramen.")
    tab = BuildTab(Inspector(sushi))
    path, said = tab.download("t", None)
    assert path.endswith(".json.gz") and "2 CoreFacts with 2 logged operations" in said
    named, _ = tab.download("t", None, BuiltSource(path="/x/WhatsApp Chat with Nate.txt", sample=None,
                                                 name="WhatsApp Chat with Nate.txt", samples=[]))
    assert Path(named).name.startswith("memsif-WhatsApp-Chat-with-Nate-20") and named.endswith(".json.gz")
    assert "restores it into this session" in list_samples(path)[1]
    *_, (namespace, _source, summary, _, _) = tab.build(path, None, "ui-restored", None)
    assert namespace == "ui-restored" and summary.startswith("**Restored**")
    assert "1 current CoreFacts (1 corrections by a person in its log)" in summary
    [fact] = sushi.facts("ui-restored")
    assert fact.statement == "Melanie loves ramen." and fact.corrected
    assert [o.op for o in sushi.fact_log("ui-restored")] == ["ADD", "EDIT"]
    foreign = tmp_path / "other.json"
    data = sushi.export_namespace("t").model_copy(update={"embedder": "another-embedder"})
    foreign.write_text(data.model_dump_json())
    *_, (_, _, refused, _, _) = tab.build(str(foreign), None, "ui-restored", None)
    assert refused.startswith("Not restored: The export was embedded with 'another-embedder'")
    assert sushi.facts("ui-restored")[0].statement == "Melanie loves ramen.", "a refused restore keeps the memory"


def test_a_corrected_source_rebuilds_the_memory_and_the_persons_corrections_are_applied_again(sushi):
    from memsif.io.transcripts import Transcript

    sushi.ingest([msg("D2:1", "I have a dog named Max, he is two", AUGUST)])
    assert [f.statement for f in sushi.facts("t")] == ["Melanie loves sushi.", "Melanie has a dog named Max."]
    sushi.edit_fact("t", "F1", statement="Melanie loves ramen.")
    sushi.delete_fact("t", "F2")
    fixed = [msg("D1:1", "I love sushi, it's my favourite food!!", MAY),
             msg("D2:1", "I have a dog named Max, he is two", AUGUST)]
    report = sushi.ingest_transcript(Transcript("t", fixed, "text", "chat.txt", source_ids=True), namespace="t",
                                     replace=True)
    assert [f.statement for f in sushi.facts("t")] == ["Melanie loves ramen."]
    log = sushi.fact_log("t")
    assert [o.op for o in log if o.decided_by == "person"] == ["EDIT", "DELETE"]
    assert not [w for w in report.warnings if "not carried over" in w]
