"""The inspector driven through its named API endpoints with ``gradio_client``, as a program would.

The app runs in this process on an engine with fakes (fake LLM, hashing embedder, in-memory Qdrant),
so the test checks the app's wiring and session isolation in seconds; ``test_browser.py`` runs the
real app on the real models.
"""


import re
from types import SimpleNamespace

import pytest

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from tests import DATA, ROOT
from tests.fakes import FakeLLM, grounded_extraction

gradio_client = pytest.importorskip("gradio_client")

FACTS = grounded_extraction({"counseling and mental health as a career": {
    "subject": "Caroline", "type": "Identity",
    "statement": "Caroline is looking into counseling and mental health as a career."}})


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The inspector on fakes: (its URL, its ``Inspector``)."""
    from tests.conftest import serve_on_fakes

    llm = FakeLLM({"segment_judge": 0.3, "trajectory_judge": 0.6, "core_extract": FACTS,
                   "core_operation": "A", "sufficiency": 0.2, "answer": "She researched adoption agencies."})
    yield from serve_on_fakes(llm, tmp_path_factory.mktemp("app"))


@pytest.fixture(scope="module")
def app_url(served):
    return served[0]


@pytest.fixture(scope="module")
def inspector(served):
    return served[1]


def test_a_client_builds_the_example_asks_and_reads_every_view(app_url):
    client = gradio_client.Client(app_url, verbose=False)
    summary, timeline, segments = client.predict(None, None, api_name="/build")
    assert "419 messages" in summary and "Topical Segments" in summary
    assert "of the judge's verdicts were a split" in summary and "The judge (fake-llm) may not tell topics apart" \
        in summary  # the fake always says 0.3
    assert timeline is not None and segments["data"], "no timeline or segment rows after a build"
    first = segments["data"][0]
    assert first[0] == "S1" and first[4] == "D1:1"

    status, facts, ops = client.predict(api_name="/build_facts")
    assert "current CoreFacts" in status
    from memsif.viz import FACT_COLUMNS
    statement = FACT_COLUMNS.index("statement")
    assert any(row[statement] == "Caroline is looking into counseling and mental health as a career."
               for row in facts["data"])
    assert any(row[1] == "ADD" for row in ops["data"])

    history, _, trace, cluster_plot, clusters, picker = client.predict("What did Caroline research?", [], False,
                                                                       api_name="/ask")
    answer = _text(history[-2])
    assert answer.startswith("She researched adoption agencies.") and "Answered by fake-llm" in answer
    assert "**Best supporting messages**" in answer and "`D" in answer  # shown above the trace
    assert "⚠️ Not in the memory it was given" not in answer  # every mention is in its context
    # under sufficiency_gate=auto only models measured on the check are asked (its model profile)
    assert history[-1]["metadata"]["title"].startswith("Trace · sufficiency not asked · traced back")
    assert trace["traced_back"] and trace["evidence_used"], "an answer the gate did not clear must trace back"
    assert cluster_plot is not None and clusters["data"], "the question fed no ActiveFact cluster"
    # every message the answer rests on opens in context: its segment, trajectory and timeline place
    best = max(trace["evidence_used"], key=lambda e: e["scores"]["priority"])["source_message_ids"][0]
    assert picker["choices"][0][0] == best
    context, context_plot = client.predict(best, api_name="/message")
    assert f"**→ `{best}`" in context and "Topical Segment **S" in context and "Event Trajectory **E" in context
    marks = [shape for shape in context_plot["plot"] and __import__("json").loads(context_plot["plot"])["layout"]
             .get("annotations", []) if shape.get("text") == best]
    assert marks, "the message is not marked on the timeline"
    unknown, _ = client.predict("D999:1", api_name="/message")
    assert unknown == "Message `D999:1` is not in this session's memory."

    figure, again = client.predict(api_name="/timeline")
    assert figure is not None
    assert again["data"] == segments["data"]
    graph, why, picker = client.predict(api_name="/trajectories")
    assert graph is not None and why is not None
    sizes = [int(re.search(r"(\d+) messages", label).group(1)) for label, _ in picker["choices"]]
    assert sizes == sorted(sizes, reverse=True), "the trajectory picker does not list the largest first"
    assert all(label.startswith(f"{value} · ") and " segment" in label for label, value in picker["choices"])
    assert "E1" in [value for _, value in picker["choices"]]
    rows = client.predict("E1", api_name="/trajectory")
    assert rows["data"] and rows["data"][0][2] == "D1:1"
    assert rows["data"][0][1].startswith(("in E1 with", "alone in E1")), "the first segment's row does not say why"
    facts_again, _ = client.predict(None, "Caroline", api_name="/facts")
    assert facts_again["data"] == facts["data"]


def test_sessions_see_nothing_of_each_other(app_url):
    owner = gradio_client.Client(app_url, verbose=False)
    owner.predict(None, None, api_name="/build")
    stranger = gradio_client.Client(app_url, verbose=False)
    _, segments = stranger.predict(api_name="/timeline")
    assert not segments["data"]
    facts, ops = stranger.predict(None, None, api_name="/facts")
    assert not facts["data"] and not ops["data"]
    history, *_ = stranger.predict("What did Caroline research?", [], False, api_name="/ask")
    assert _text(history[-1]).startswith("No memory yet")
    said, *_ = owner.predict(False, api_name="/forget")
    _, segments = owner.predict(api_name="/timeline")
    assert said.startswith("Nothing was deleted") and segments["data"], "deleted without confirmation"
    said, _, rows, *views = owner.predict(True, api_name="/forget")
    tables = [v for v in views if isinstance(v, dict) and "data" in v]
    assert said == "This session's memory was deleted." and not rows["data"]
    assert len(tables) >= 6 and not any(t["data"] for t in tables), "a view still shows deleted memory"
    _, segments = owner.predict(api_name="/timeline")
    assert not segments["data"], "the owner's memory is still there after /forget"


def test_settings_rebuild_with_new_thresholds_and_reject_bad_ones(app_url, inspector):
    client = gradio_client.Client(app_url, verbose=False)
    _, _, default_rows = client.predict(None, None, api_name="/build")
    model = inspector.model_choices()[0]
    status = client.predict(0.8, 0.05, 0.1, 3, 0.45, 0.45, model, api_name="/settings")
    assert "τ_split=0.05" in status
    summary, _, rows = client.predict(api_name="/rebuild")
    assert "419 messages" in summary
    base = inspector.engine().config
    assert (f"Settings in force that differ from the defaults: τ_split 0.05 (default {base.tau_split:g}), "
            f"τ_merge 0.1 (default {base.tau_merge:g})") in summary, summary
    assert "θ_s" not in summary.split("Settings in force")[1], "a setting at its default is not named"
    assert len(rows["data"]) < len(default_rows["data"]), "a lower τ_merge should merge more messages by rule"
    with pytest.raises(Exception, match="tau_split"):
        client.predict(0.8, 0.7, 0.6, 3, 0.45, 0.45, model, api_name="/settings")


def _text(message: dict) -> str:
    """A chat message's text (Gradio returns a string or a list of typed parts)."""
    content = message["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return content


def test_two_builds_and_a_chat_at_once_give_exact_counts_and_no_cross_talk(app_url, tmp_path):
    small = tmp_path / "small.txt"
    small.write_text("## 3 March 2024\nAna: I planted tomatoes.\nBen: Which ones?\nAna: San Marzano.\n")
    chatter = gradio_client.Client(app_url, verbose=False)
    chatter.predict(gradio_client.handle_file(str(small)), None, api_name="/build")
    first, second = gradio_client.Client(app_url, verbose=False), gradio_client.Client(app_url, verbose=False)
    job_a = first.submit(None, None, api_name="/build")                       # conv-26, 419 messages
    job_b = second.submit(gradio_client.handle_file(str(small)), None, api_name="/build")
    answers = [chatter.predict("Which tomatoes did Ana plant?", [], False, api_name="/ask") for _ in range(3)]
    summary_a, _, rows_a = job_a.result()
    summary_b, _, rows_b = job_b.result()
    assert "419 messages" in summary_a and "3 messages" in summary_b
    assert sum(r[3] for r in rows_a["data"]) == 419 and sum(r[3] for r in rows_b["data"]) == 3
    assert all(r[4].startswith("D") for r in rows_b["data"]) and rows_b["data"][0][4] == "D1:1"
    for _history, _, trace, *_ in answers:
        speakers = {e["subject"] for e in trace["evidence_used"]} | {f["subject"] for f in trace["facts_used"]}
        assert trace["evidence_used"] and speakers <= {"Ana", "Ben"}, f"the chat saw another session: {speakers}"
    _, ops = first.predict(None, None, api_name="/facts")  # readable while others write
    assert ops["data"] == []


def test_building_another_transcript_replaces_the_sessions_memory(app_url, tmp_path):
    first = tmp_path / "bike.txt"
    first.write_text("## 1 June 2024\nMia: My bike is red.\nTom: Nice bike!\n")
    second = tmp_path / "trip.txt"
    second.write_text("## 2 June 2024\nMia: I fly to Oslo on Friday.\nTom: Have a good trip.\nMia: Thanks!\n")
    client = gradio_client.Client(app_url, verbose=False)
    summary, _, _ = client.predict(gradio_client.handle_file(str(first)), None, api_name="/build")
    assert "2 messages" in summary and "(bike)" in summary
    summary, _, rows = client.predict(gradio_client.handle_file(str(second)), None, api_name="/build")
    assert sum(r[3] for r in rows["data"]) == 3
    assert "3 messages" in summary and "replaced the memory of `bike.txt`" in summary
    _, _, trace, *_ = client.predict("Where does Mia fly?", [], False, api_name="/ask")
    assert trace["evidence_used"] and all("bike" not in e["statement"] for e in trace["evidence_used"])
    again, _, _ = client.predict(gradio_client.handle_file(str(second)), None, api_name="/build")
    assert "3 messages" in again and "replaced" not in again, "the same transcript again adds nothing"


def test_uploads_over_the_size_limit_are_refused_before_parsing(tmp_path):
    import gradio as gr

    from memsif.inspector import build

    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(build.MAX_UPLOAD_BYTES + 1)
    with pytest.raises(gr.Error, match="larger than 20 MB"):
        build.checked_path(str(big))


def test_a_chatgpt_export_builds_and_its_warnings_show(app_url):
    client = gradio_client.Client(app_url, verbose=False)
    export = DATA / "formats" / "chatgpt-conversations.json"
    summary, _, _ = client.predict(gradio_client.handle_file(str(export)), None, api_name="/build")
    assert "3 messages" in summary and "1 conversation: Trip planning" in summary
    assert "left out 1 message that was not conversation: 1 system prompt" in summary


def test_an_export_of_three_conversations_is_listed_by_title_and_built_into_one_memory(app_url):
    client = gradio_client.Client(app_url, verbose=False)
    export = DATA / "formats" / "chatgpt-three-conversations.json"
    box, _ = client.predict(gradio_client.handle_file(str(export)), api_name="/samples")
    labels = [label for label, _ in box["choices"]]
    assert box["value"] == "all conversations" and labels[0].startswith("All conversations (3")
    assert labels[1:] == ["Garden plans · 1 January 2024 · 2 messages", "Moving to Lyon · 3 March 2024 · 3 messages",
                          "Rent went up · 1 May 2024 · 3 messages"]
    summary, _, rows = client.predict(gradio_client.handle_file(str(export)), "all conversations", api_name="/build")
    assert "8 messages" in summary and "3 conversations: Garden plans, Moving to Lyon, Rent went up" in summary
    sessions = {name for row in rows["data"] for name in row[6].split(", ")}
    assert sessions <= {"Garden plans", "Moving to Lyon", "Rent went up"} and sessions, \
        f"the segment table names conversations by id, not title: {sessions}"
    assert {name for row in client.predict(api_name="/timeline")[1]["data"] for name in row[6].split(", ")} == sessions


def test_a_bad_upload_gets_one_message_in_the_page_and_the_memory_stays(app_url, tmp_path):
    client = gradio_client.Client(app_url, verbose=False)
    good = tmp_path / "bike.txt"
    good.write_text("## 1 June 2024\nMia: My bike is red.\nTom: Nice bike!\n")
    summary, _, rows = client.predict(gradio_client.handle_file(str(good)), None, api_name="/build")
    assert "2 messages" in summary and rows["data"]
    png = tmp_path / "photo.json"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    _, said = client.predict(gradio_client.handle_file(str(png)), api_name="/samples")
    summary, _, _ = client.predict(gradio_client.handle_file(str(png)), None, api_name="/build")
    assert re.search(r"It holds 2 messages in \d+ Topical Segments, from `bike.txt`", summary), summary
    for text in (said, summary):
        assert text.count("was not loaded") == 1 and "**photo.json**" in text
        assert "looks like Portable Network Graphics" in text and "Accepted: LoCoMo" in text
        assert "/tmp/gradio" not in text and "Nothing was changed" in text
    _, _, trace, *_ = client.predict("What colour is Mia's bike?", [], False, api_name="/ask")
    assert trace["evidence_used"], "the session's memory must survive a bad upload"


def test_the_chat_has_a_send_button_and_a_placeholder_from_the_loaded_transcript(tmp_path):
    from memsif.inspector import build, build_demo

    example = build.load_transcripts(build.EXAMPLE)
    assert build.question_hint(example) == "When did Caroline go to the LGBTQ support group?"
    chat = tmp_path / "bike.txt"
    chat.write_text("## 1 June 2024\nMia: My bike is red.\nTom: Nice bike!\nMia: Thanks.\n")
    assert build.question_hint(build.load_transcripts(chat)) == "What did Mia talk about?"
    demo = build_demo(MemSIF(MemSIFConfig(data_dir=str(tmp_path / "data"))))
    assert any(getattr(b, "elem_id", None) == "send-btn" for b in demo.blocks.values())


def test_the_evaluate_lens_compares_memsif_with_flat_baselines_on_the_files_own_questions(app_url, inspector):
    client = gradio_client.Client(app_url, verbose=False)
    summary, _, _ = client.predict(api_name="/evaluate")
    assert summary.startswith("No memory yet")
    client.predict(None, None, api_name="/build")
    summary, plot, table = client.predict(api_name="/evaluate")
    assert "questions** (" in summary and "NCE" in summary
    for system in ("| MemSIF |", "| Hybrid RAG |", "| Naive RAG |"):
        assert system in summary
    memsif_row = next(line for line in summary.splitlines() if line.startswith("| MemSIF |"))
    assert re.search(r"\d+\.\d % \[\d+\.\d, \d+\.\d\]", memsif_row), "no 95 % interval beside the recall"
    assert re.search(r"\| MemSIF − Hybrid RAG \| [+-]\d+\.\d points \[[+-]\d+\.\d, [+-]\d+\.\d\]", summary)
    strict = summary.split("**Strict evidence recall**")[1]
    assert re.search(r"\| Hybrid RAG \| \d+\.\d % \[", strict), "strict recall is given for every system"
    assert re.search(r"\| MemSIF − Hybrid RAG \| [+-]\d+\.\d points", strict)
    assert not [ns for ns in inspector.engine().namespaces() if ns.endswith("-eval")], "the evaluation copy stayed"
    rows = table["data"]
    assert len(rows) > 100, "the bundled conv-26 carries more than a hundred scored questions"
    first = rows[0]  # most spread-out evidence first
    assert first[2] >= 0.3 and "," in first[3], "an NCE question has several gold turns"
    assert all(f"{g}: " in first[7] for g in first[3].split(", ")), "each gold turn says how it was found"
    assert plot is not None
    client.predict("What did Caroline research?", [], False, api_name="/ask")
    clusters = client.predict(api_name="/clusters")[1]
    queries = " | ".join(row[6] for row in clusters["data"])
    assert "When did Caroline go to the LGBTQ support group?" not in queries, \
        "the evaluation's questions leaked into the session's own ActiveFact clusters"


def test_a_client_build_streams_its_progress(app_url):
    client = gradio_client.Client(app_url, verbose=False)
    job = client.submit(None, None, api_name="/build")
    job.result(timeout=300)
    summaries = [out[0] for out in job.outputs()]
    assert len(summaries) >= 2, "the build reported nothing before its result"
    assert any(s.startswith(("Building Structured Interaction Memory", "Loading models")) for s in summaries[:-1])
    assert "Topical Segments" in summaries[-1]


def test_an_edited_file_under_the_same_name_replaces_what_changed_and_says_so(app_url, tmp_path):
    client = gradio_client.Client(app_url, verbose=False)
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "bike.txt").write_text("## 1 June 2024\nMia: My bike is red.\nTom: Nice bike!\n")
    (second / "bike.txt").write_text("## 2 June 2024\nMia: My bike is red.\nTom: Nice bike!\nMia: Thanks.\n")
    summary, _, _ = client.predict(gradio_client.handle_file(str(first / "bike.txt")), None, api_name="/build")
    assert "2 messages" in summary
    summary, _, _ = client.predict(gradio_client.handle_file(str(second / "bike.txt")), None, api_name="/build")
    assert "3 messages" in summary and "replaced 2 stored message(s)" in summary and "D1:1 time" in summary


@pytest.mark.parametrize(("judge", "warned"), [(0.2, True), (0.8, True), ("alternate", False)])
def test_every_build_reports_structure_health_and_warns_when_degenerate(engine_factory, judge, warned):
    from memsif.inspector.build import structure_health
    from tests.conftest import make_messages

    flips = iter([0.8, 0.8, 0.2] * 10)
    llm = FakeLLM({"segment_judge": (lambda p: next(flips)) if judge == "alternate" else judge,
                   "trajectory_judge": 0.5})
    engine = engine_factory(llm=llm, tau_split=0.0, tau_merge=0.999)
    engine.ingest(make_messages([f"message number {k} about topic {k % 4}" for k in range(16)]))
    line = structure_health(engine, "t")
    assert "**Structure health**" in line and "Topical Segments hold one message" in line
    assert "the judge decided 15 of 16 messages" in line
    assert re.search(r"Event Trajectories: \d+ of \d+ segments share one with another \(\d+ trajectories of two or "
                     r"more\), decided over the whole memory by .+; no model was asked", line), line  # and says so
    assert ("⚠️ The structure looks degenerate" in line) == warned, line
    assert "Build again with the default model" in line if warned else True  # a fake is not the default model


def test_the_degenerate_warning_on_the_default_model_does_not_advise_the_default_model(engine_factory):
    from memsif.inspector.build import degenerate_advice

    llm = FakeLLM({})
    llm.name = "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged, llama.cpp)"
    advice = degenerate_advice(engine_factory(llm=llm))
    assert "default model" not in advice.replace("The default model's judge", "") and "τ_split" in advice


def test_evaluation_copies_a_crashed_process_left_are_removed_on_start(engine_factory):
    from memsif.inspector.common import remove_evaluation_copies
    from tests.conftest import make_messages

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}))
    for ns in ("ui-0123456789ab-eval", "ui-0123456789ab", "alice-eval"):
        engine.ingest(make_messages(["I planted tomatoes."], namespace=ns), namespace=ns)
    assert remove_evaluation_copies(engine) == ["ui-0123456789ab-eval"]
    assert sorted(engine.namespaces()) == ["alice-eval", "ui-0123456789ab"], "only a session's evaluation copy goes"


def test_without_a_file_the_example_is_its_prebuilt_memory_and_live_builds_it_again(app_url, inspector,
                                                                                     monkeypatch):
    """The page's first visit: the example's memory made by this engine's models is imported in seconds,
    says how it was built, and keeps its clusters; ticking "live" builds it for real instead."""
    from memsif.inspector import build
    from memsif.transfer import content_fingerprint

    eng = inspector.engine()
    [conv] = build.as_memories(build.load_upload(str(build.EXAMPLE)))
    eng.ingest_transcript(conv, "prebuild", core_facts=True)
    eng.ask("What did Caroline research?", namespace="prebuild")
    made = eng.export_namespace("prebuild", decimals=4, provenance={
        "model": "fake-llm", "content": content_fingerprint(eng.config), "built": "2026-12-01",
        "machine": "2 CPU cores", "structure_seconds": 266,
        "core_facts_seconds": 537, "questions": [{"question": "What did Caroline research?"}],
        "command": "PYTHONPATH=. python benchmarks/build_example.py"})
    eng.delete_namespace("prebuild")
    monkeypatch.setattr(inspector, "example", lambda: made)

    client = gradio_client.Client(app_url, verbose=False)
    summary, timeline, segments = client.predict(None, None, False, api_name="/build")
    assert "prebuilt example memory" in summary and "built on 2026-12-01 with `fake-llm`" in summary, summary
    assert "Structured Interaction Memory in 266 s, CoreFacts in 537 s" in summary and "Loaded in" in summary
    linked = sum(len(t.segment_ids) > 1 for t in made.trajectories)
    assert f"Event Trajectories** ({linked} hold{'s' * (linked == 1)} two or more segments)" in summary, summary
    assert "**Structure health**" in summary and timeline is not None and len(segments["data"]) == len(made.segments)
    assert "**This session's memory**: namespace `" in summary and "`python -m memsif show --namespace " in summary
    status, facts, _ = client.predict(api_name="/build_facts")
    assert "current CoreFacts" in status and "no new operations" in status, "the prebuilt memory was extracted again"
    assert len(facts["data"]) == len(made.facts)
    assert client.predict(api_name="/clusters")[1]["data"], "the prebuilt memory's candidate clusters are gone"
    again, _, _ = client.predict(None, None, False, api_name="/build")
    assert "Already loaded" in again

    live = client.submit(None, None, True, api_name="/build")
    live.result(timeout=300)
    said = [out[0] for out in live.outputs()]
    assert any(s.startswith("Building Structured Interaction Memory") for s in said[:-1]), said[:3]
    assert "prebuilt" not in said[-1] and "(replaced the memory of `locomo-conv-26.json`)" in said[-1]


def test_the_prebuilt_example_is_matched_on_its_content_fingerprint_not_on_the_models_display_name():
    """The same weights, embedder and content settings under another back-end's display name still
    match; another model file, embedder or content setting does not, and neither does an export that
    records no fingerprint."""
    from memsif.config import MemSIFConfig
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector
    from memsif.transfer import content_fingerprint

    config = MemSIFConfig()
    eng = SimpleNamespace(config=config, embedder=SimpleNamespace(name="all-MiniLM-L6-v2"),
                          llm=SimpleNamespace(name="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged)"))
    made = SimpleNamespace(embedder="all-MiniLM-L6-v2", provenance={
        "model": "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged, llama.cpp)",
        "content": content_fingerprint(config.replace(llm_backend="llamacpp", llm_threads=2))})
    app = Inspector(eng)
    app.example = lambda: made  # the prebuilt example this page would offer
    tab = BuildTab(app)
    assert tab.prebuilt_for(eng, None) is made, "another back-end's display name refused the same weights"
    for other in (config.replace(llm_model="packaged:smollm2-135m-instruct"), config.replace(tau_split=0.3),
                  config.replace(trajectory_link="model"), config.replace(embedder_model="all-mpnet-base-v2")):
        made.provenance["content"] = content_fingerprint(other)
        assert tab.prebuilt_for(eng, None) is None, other
    del made.provenance["content"]
    assert tab.prebuilt_for(eng, None) is None, "an export without a fingerprint was taken for this engine's"


def test_the_example_is_built_live_when_the_prebuilt_memory_is_not_this_engines(app_url, inspector,
                                                                                 monkeypatch):
    other = SimpleNamespace(embedder="hash-embedder", provenance={"model": "another-model"})  # not this engine's
    monkeypatch.setattr(inspector, "example", lambda: other)
    client = gradio_client.Client(app_url, verbose=False)
    summary, _, _ = client.predict(None, None, False, api_name="/build")
    assert "419 messages" in summary and "prebuilt" not in summary


def test_a_corefact_job_whose_memory_is_replaced_ends_with_its_reason_and_no_error(engine_factory):
    import json

    from memsif.inspector.common import Inspector
    from memsif.inspector.corefacts import CoreFactsTab
    from memsif.locks import cancel
    from tests.conftest import make_messages

    def extract(prompt):
        cancel("ui-job", "the memory was replaced by a build of `b.txt`")
        return json.dumps({"facts": []})

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5, "core_extract": extract,
                                         "core_operation": "A"}))
    engine.ingest(make_messages(["I planted tomatoes.", "They grow fast."], namespace="ui-job"), namespace="ui-job")
    tab = CoreFactsTab(Inspector(engine))
    *_, (status, facts, ops) = list(tab.build_facts("ui-job", None, progress=lambda *a, **k: None))
    assert status == "⏹️ CoreFact extraction stopped: the memory was replaced by a build of `b.txt`."
    assert facts == [] and ops == []


def test_a_failed_build_says_why_shows_the_memory_that_exists_and_starts_no_corefacts(engine_factory, monkeypatch,
                                                                                       tmp_path):
    from memsif.errors import StoreError
    from memsif.inspector.build import BuildTab
    from memsif.inspector.common import Inspector
    from memsif.inspector.corefacts import CoreFactsTab

    engine = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}))
    app = Inspector(engine)

    def broken(*args, **kwargs):
        raise StoreError("the memory folder is full; free disk space")

    monkeypatch.setattr(engine, "ingest_transcript", broken)
    chat = tmp_path / "bike.txt"
    chat.write_text("## 1 June 2024\nMia: My bike is red.\nTom: Nice bike!\n")
    *_, (ns, source, summary, fig, rows) = list(BuildTab(app).build(str(chat), None, "ui-fail", None, None,
                                                                    progress=lambda *a, **k: None))
    assert summary == "⚠️ The build failed: the memory folder is full; free disk space This session holds no memory now."
    assert fig is None and rows == [] and source.failed
    [(status, *_)] = list(CoreFactsTab(app).facts_after_build(source, ns, None))
    assert status.startswith("CoreFacts were not extracted: the build did not finish")


@pytest.mark.parametrize(("env", "forget"), [
    ({}, False), ({"SPACE_ID": "memsif/inspector"}, True),
    ({"SPACE_ID": "x", "MEMSIF_APP_FORGET_SESSIONS": "0"}, False),
    ({"MEMSIF_APP_FORGET_SESSIONS": "1"}, True), ({"MEMSIF_APP_FORGET_SESSIONS": " 1 "}, True)])
def test_sessions_are_forgotten_by_default_on_a_space_only(env, forget):
    import importlib.util

    spec = importlib.util.spec_from_file_location("memsif_app", ROOT / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    assert app.forget_sessions(env) is forget


def test_a_plain_text_file_is_offered_as_the_whole_file_not_by_its_stem(app_url, tmp_path):
    client = gradio_client.Client(app_url, verbose=False)
    chat = tmp_path / "chat.txt"
    chat.write_text("## 1 June 2024\nMia: My bike is red.\nTom: Nice bike!\n")
    box, _ = client.predict(gradio_client.handle_file(str(chat)), api_name="/samples")
    assert box["choices"] == [["the whole file · 2 messages", "chat"]] and box["value"] == "chat"


def test_a_build_that_replaces_a_memory_empties_the_chat_about_the_old_one():
    from memsif.inspector.chat import chat_after_build
    from memsif.inspector.common import BuiltSource

    chat, trace, pick, context, plot = chat_after_build(BuiltSource("b.txt", None, "b.txt", ["b"], replaced=True))
    assert chat == [] and trace is None and context == "" and plot is None and pick.choices == []
    import gradio as gr

    assert list(chat_after_build(BuiltSource("b.txt", None, "b.txt", ["b"]))) == [gr.skip()] * 5, \
        "a build of the same file emptied the chat"


def test_a_click_while_the_models_load_says_so_until_they_are_loaded(monkeypatch):
    import time

    from memsif.inspector.common import Inspector

    def slow(settings):
        time.sleep(1.2)
        return "engine"

    app = Inspector(MemSIF(MemSIFConfig(data_dir="unused")))  # its models not loaded
    monkeypatch.setattr(app, "engine_for", slow)
    said = list(app.loading_engine(None))
    assert said[0][0] == "status" and said[0][1].startswith("⏳ Loading the models") and len(said) >= 3
    assert said[-1] == ("done", "engine")


#: A transcript whose messages and speaker names hold HTML and Markdown (a script in a tag, emphasis,
#: a link to a script, a style sheet): the browser check (``test_browser_markup.py``) uses it too.
IMG = '<img src=x onerror="window.__pwned=1">'
MARKUP_TRANSCRIPT = f"""## 8 May 2023
Ana: I planted San Marzano tomatoes {IMG} in the garden.
<b>Bo</b>: <b>bold</b> move! [link](javascript:window.__pwned=2) <style>body{{display:none}}</style>
Ana: The tomatoes need staking & watering <script>window.__pwned=3</script> daily.
Bo: Good luck with the garden, the tomatoes will love the sun.
## 20 June 2023
Ana: My San Marzano tomatoes are ripe now {IMG} and sweet.
Bo: A great harvest, <b>bold</b> and red.
"""


def _made_markup(text: str, markdown: bool = True) -> list[str]:
    """What HTML (and Markdown) would make of ``text``: the transcript's tags (and links)."""
    link = r"|(?<!\\)\]\(javascript" if markdown else ""  # an unescaped "](" makes a link
    return re.findall(r"<img|<b>Bo|<b>bold|<b>did|<script|<style" + link, text)


def test_markup_in_a_transcript_is_shown_as_written_by_every_endpoint(app_url, tmp_path):
    """Every view's Markdown (the build summary, the chat's question, answer and trace, a message in
    context) and every figure's hover text hold the escaped form of what the transcript brought; the
    tables hold it as written (a str cell is shown as text)."""
    import json

    path = tmp_path / "<b>garden_[x].txt"
    path.write_text(MARKUP_TRANSCRIPT)
    client = gradio_client.Client(app_url, verbose=False)
    summary, timeline, _ = client.predict(gradio_client.handle_file(str(path)), None, api_name="/build")
    assert "6 messages" in summary and not _made_markup(summary), summary
    assert "garden\\_\\[x\\])" in summary, summary  # the sample's name as written (the upload drops "<b>")
    hover = json.dumps([t.get("hovertext") for t in json.loads(timeline["plot"])["data"]])
    assert "&lt;img src=x onerror=" in hover and "&lt;b&gt;Bo&lt;/b&gt;" in hover and not _made_markup(hover, False)

    history, _, _, clusters_plot, _, _ = client.predict("Which tomatoes <b>did</b> Ana plant?", [], False,
                                                        api_name="/ask")
    question, answer, folded = (_text(m) for m in history)
    assert question == "Which tomatoes &lt;b&gt;did&lt;/b&gt; Ana plant?"
    for markdown in (answer, folded):
        assert not _made_markup(markdown), markdown
    assert "&lt;img src=x onerror=" in folded or "&lt;b&gt;bold&lt;/b&gt;" in folded, folded
    hover = json.dumps([t.get("hovertext") for t in json.loads(clusters_plot["plot"])["data"]])
    assert not _made_markup(hover, False), hover
    for message_id, shown in (("D1:1", "&lt;img src=x onerror="), ("D1:2", "&lt;b&gt;Bo&lt;/b&gt;"),
                              ("D1:2", "\\[link\\](javascript:window"), ("D1:3", "&lt;script&gt;")):
        context, _ = client.predict(message_id, api_name="/message")
        assert shown in context and not _made_markup(context), context
    unknown, _ = client.predict("<b>D9:9</b>", api_name="/message")
    assert unknown == "Message `<b>D9:9</b>` is not in this session's memory."  # a code span shows it as written

    graph, why, picker = client.predict(api_name="/trajectories")
    for figure in (graph, why):
        assert not _made_markup(json.dumps([t.get("hovertext") for t in json.loads(figure["plot"])["data"]]), False)
    rows = [r for _, tid in picker["choices"] for r in client.predict(tid, api_name="/trajectory")["data"]]
    assert {r[5] for r in rows} == {"Ana", "<b>Bo</b>", "Bo"}, "a table does not show the speaker as written"
    assert f"I planted San Marzano tomatoes {IMG} in the garden." in [r[6] for r in rows]


def test_every_table_shows_its_cells_as_text():
    """Gradio renders a Dataframe cell as Markdown or HTML only for those datatypes: every table of the
    page keeps "str", so the rows it is given (messages, facts, clusters, questions) are shown as written."""
    import gradio as gr

    from memsif.inspector import build_demo

    page = build_demo(MemSIF(MemSIFConfig(data_dir="unused")))  # its models load on a first visit only
    tables = [b for b in page.blocks.values() if isinstance(b, gr.Dataframe)]
    assert len(tables) >= 8 and all(t.datatype == "str" for t in tables), [t.datatype for t in tables]


def test_every_tables_column_widths_name_each_of_its_columns_and_fill_the_row():
    """A table given fewer widths than it has columns squeezes the rest (message ids wrapping in the segment
    table, a fact's status pushed out of view); one whose widths do not add up to the row leaves a gap."""
    import gradio as gr

    from memsif.inspector import build_demo

    page = build_demo(MemSIF(MemSIFConfig(data_dir="unused")))
    tables = [b for b in page.blocks.values() if isinstance(b, gr.Dataframe) and b.column_widths]
    assert len(tables) >= 5
    for t in tables:
        headers = t.value["headers"]
        assert len(t.column_widths) == len(headers), (t.elem_id or t.label, headers, t.column_widths)
        assert sum(float(w.rstrip("%")) for w in t.column_widths) == pytest.approx(100), (t.elem_id, t.column_widths)


def test_an_error_shown_in_the_page_is_escaped_and_an_agent_gets_it_as_it_is():
    """Gradio's error pop-up renders HTML: the page's handlers escape the error's text (it may quote a
    transcript or a model's output); the agent tools hand it over unchanged."""
    import gradio as gr

    from memsif.errors import LLMOutputError
    from memsif.inspector.common import guard, tool_guard

    def failing():
        raise LLMOutputError(f"the model wrote {IMG}; try again")

    with pytest.raises(gr.Error) as shown:
        guard(failing)()
    assert shown.value.message == "the model wrote &lt;img src=x onerror=\"window.__pwned=1\"&gt;; try again"
    with pytest.raises(gr.Error) as handed:
        tool_guard(failing)()
    assert handed.value.message == f"the model wrote {IMG}; try again"


def test_a_refused_upload_and_a_failed_build_quote_what_they_name_as_written(tmp_path):
    """What a refused upload or a failed build quotes (the file's name, its keys, an error that names
    what a transcript held) is shown as written in the page's Markdown: no tag, link or emphasis."""
    from memsif.errors import MemSIFError
    from memsif.inspector.build import UploadRefused, load_upload, stopped_summary

    path = tmp_path / "<b>notes_[x].json"
    path.write_text('{"<img src=x onerror=1>": 1}')
    with pytest.raises(UploadRefused) as refused:
        load_upload(str(path))
    said = str(refused.value)
    assert said.startswith("⚠️ **&lt;b&gt;notes\\_\\[x\\].json** was not loaded: unknown JSON layout"), said
    assert "the file's keys: &lt;img src=x onerror=1&gt;" in said and not _made_markup(said), said

    class NoMemory:
        def has_memory(self, namespace):
            return False

    failed = stopped_summary(NoMemory(), "ns", MemSIFError(f"the model wrote {IMG} and [link](javascript:x)"))
    assert failed == ('⚠️ The build failed: the model wrote &lt;img src=x onerror="window.\\_\\_pwned=1"&gt; and '
                      "\\[link\\](javascript:x) This session holds no memory now."), failed


def test_a_chat_turn_written_into_memory_counts_as_the_chat_for_whoever_waits_behind_it(engine_factory):
    """The user's message written into memory is part of the chat a person waits for: its judge calls
    are "a chat answer" in the line for the model, not "a memory build"."""
    from memsif.inspector.chat import ChatTab
    from memsif.inspector.common import Inspector
    from memsif.locks import current_kind
    from tests.conftest import make_messages

    kinds = []

    def judge(prompt):
        kinds.append(current_kind())
        return 0.5

    # every message goes to the judge, also the chat turn in its own (new) session
    engine = engine_factory(llm=FakeLLM({"segment_judge": judge, "trajectory_judge": 0.5}), tau_split=0.0,
                            tau_merge=1.0, split_sessions=False)
    engine.ingest(make_messages(["I planted tomatoes.", "They grow fast."], namespace="ui-chat"), namespace="ui-chat")
    kinds.clear()
    app = Inspector(engine)
    clusters = SimpleNamespace(clusters_view=lambda namespace, settings: (None, []))
    list(ChatTab(app, clusters=clusters).chat("I also planted basil yesterday.", [], True, "ui-chat", None))
    assert len(engine.messages("ui-chat")) == 3 and kinds and set(kinds) == {"a chat answer"}, kinds


def test_a_background_job_that_has_counted_nothing_shows_no_empty_bar():
    """While models load or a memory is copied, nothing is counted: the progress shows words, never
    "starting 0/0 - 0.0 %"; once counting, the fraction and the count."""
    import time

    from memsif.inspector.common import WAITING, in_background

    calls = []

    def work(report):
        time.sleep(0.7)
        report(1, 4, "segments")
        time.sleep(0.7)
        return "built"

    out = list(in_background(work, lambda value, desc=None: calls.append((value, desc)), lambda now, s: "…"))
    assert out[-1] == ("done", "built")
    assert calls[0] == (None, WAITING) and (0.25, "segments 1/4") in calls, calls
    assert not [c for c in calls if c[1] and "0/0" in c[1]]
