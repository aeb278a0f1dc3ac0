"""The memory tools an agent uses over MCP (Gradio's MCP server): listed, called, and refused with
a reason; the page's per-session endpoints are not among them. Fakes for the models."""

import asyncio
import json

import pytest

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.store import MemoryStore
from tests.fakes import FakeLLM, HashEmbedder, TableEntities, grounded_extraction

mcp = pytest.importorskip("mcp")
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

TRANSCRIPT = """## 3 March 2024
Alice: My rent is 1,200 euros a month.
Bob: That's a lot for Lisbon.
Alice: I also started learning the cello last week.
"""


LLM = FakeLLM()


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory):
    from memsif.inspector import build_demo

    facts = grounded_extraction({"cello": {"subject": "Alice", "type": "Event",
                                           "statement": "Alice started learning the cello."}})
    LLM.answers.update({"segment_judge": 0.3, "trajectory_judge": 0.6, "core_extract": facts, "core_operation": "A",
                        "sufficiency": 0.2, "answer": "The cello.", "fact_verify": 0.9})
    config = MemSIFConfig(data_dir=str(tmp_path_factory.mktemp("mcp")), fact_verification="model")
    demo = build_demo(MemSIF(config, llm=LLM,
                             embedder=HashEmbedder(), entities=TableEntities(), store=MemoryStore(in_memory=True)),
                      mcp=True)
    demo.queue()
    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True, mcp_server=True)
    yield url + "gradio_api/mcp/"
    demo.close()


async def _session(url, work):
    async with streamable_http_client(url) as (read, write, _), mcp.ClientSession(read, write) as session:
        await session.initialize()
        return await work(session)


def _call(url, name, args):
    async def work(session):
        result = await session.call_tool(name, args)
        text = "".join(getattr(c, "text", "") for c in result.content)
        return result.isError, text
    return asyncio.run(_session(url, work))


def test_an_agent_sees_only_the_memory_tools_with_their_arguments(mcp_url):
    async def work(session):
        return (await session.list_tools()).tools
    tools = {t.name: t for t in asyncio.run(_session(mcp_url, work))}
    assert set(tools) == {"memory_ingest", "memory_ask", "memory_facts", "memory_correct_fact", "memory_forget_fact"}
    assert set(tools["memory_correct_fact"].inputSchema["required"]) == {"namespace", "fact_id"}
    ingest = tools["memory_ingest"]
    assert set(ingest.inputSchema["required"]) == {"namespace", "transcript"}
    assert "Speaker: text" in ingest.inputSchema["properties"]["transcript"]["description"]
    assert "OpenAI-messages JSON document" in ingest.inputSchema["properties"]["transcript"]["description"], \
        "a wrapped argument description reaches the agent whole"
    assert "Structured Interaction Memory" in ingest.description
    assert "whether the facts alone" in tools["memory_ask"].description, "no stray commas where lines wrapped"


def test_with_mcp_on_the_page_endpoints_keep_their_api_docs(mcp_url):
    import gradio_client

    api = gradio_client.Client(mcp_url.removesuffix("gradio_api/mcp/"), verbose=False).view_api(
        print_info=False, return_format="dict")
    named = set(api["named_endpoints"])
    wanted = {"/build", "/ask", "/timeline", "/evaluate", "/memory_ingest", "/memory_ask", "/memory_facts"}
    assert wanted <= named, named


def test_an_agent_ingests_asks_and_reads_facts_in_its_own_namespace(mcp_url):
    failed, text = _call(mcp_url, "memory_ingest", {"namespace": "alice-agent", "transcript": TRANSCRIPT,
                                                   "core_facts": True})
    assert not failed, text
    report = json.loads(text)
    assert report["messages_added"] == 3 and report["topical_segments"] >= 1
    assert report["core_fact_operations"].get("ADD") == 1
    failed, text = _call(mcp_url, "memory_ingest", {"namespace": "alice-agent", "transcript": TRANSCRIPT})
    assert json.loads(text)["messages_added"] == 0, "the same messages again must add nothing"

    failed, text = _call(mcp_url, "memory_ask", {"namespace": "alice-agent", "question": "What is Alice learning?"})
    assert not failed, text
    answer = json.loads(text)
    assert answer["answer"] == "The cello." and answer["model"] == "fake-llm"
    assert any("D1:3" in e["message_ids"] for e in answer["evidence"]), answer["evidence"]

    failed, text = _call(mcp_url, "memory_facts", {"namespace": "alice-agent", "subject": "alice"})
    facts = json.loads(text)
    assert [f["statement"] for f in facts["core_facts"]] == ["Alice started learning the cello."]
    assert facts["core_facts"][0]["source_message_ids"] == ["D1:3"]
    assert facts["core_facts"][0]["verification"]["p_yes"] == 0.9 and facts["held_back"]["core_facts"] == 0


def test_facts_nobody_verified_are_held_back_and_counted(mcp_url):
    LLM.fail.add("fact_verify")  # the model cannot be called: the fact is stored, not verified
    try:
        failed, text = _call(mcp_url, "memory_ingest", {"namespace": "unverified", "transcript": TRANSCRIPT,
                                                       "core_facts": True})
        assert not failed, text
    finally:
        LLM.fail.discard("fact_verify")
    facts = json.loads(_call(mcp_url, "memory_facts", {"namespace": "unverified"})[1])
    assert facts["core_facts"] == []
    assert facts["held_back"]["core_facts"] == 1
    assert facts["held_back"]["why"] == ["not verified: the model failed (LLMError: fake failure for fact_verify)"]


def test_an_agent_corrects_forgets_and_restores_a_fact_and_the_log_says_who(mcp_url):
    transcript = TRANSCRIPT.replace("3 March 2024", "4 March 2024")
    assert not _call(mcp_url, "memory_ingest", {"namespace": "corrected", "transcript": transcript,
                                                "core_facts": True})[0]
    failed, text = _call(mcp_url, "memory_correct_fact", {"namespace": "corrected", "fact_id": "F1",
                                                          "statement": "Alice started learning the viola."})
    assert not failed, text
    edit = json.loads(text)
    assert edit["op"] == "EDIT" and edit["decided_by"] == "person" and edit["fact_ids"] == ["F1", "F2"]
    facts = json.loads(_call(mcp_url, "memory_facts", {"namespace": "corrected"})[1])
    assert [f["statement"] for f in facts["core_facts"]] == ["Alice started learning the viola."]
    forgot = json.loads(_call(mcp_url, "memory_forget_fact", {"namespace": "corrected", "fact_id": "F2"})[1])
    assert forgot["op"] == "DELETE"
    assert json.loads(_call(mcp_url, "memory_facts", {"namespace": "corrected"})[1])["core_facts"] == []
    back = json.loads(_call(mcp_url, "memory_forget_fact", {"namespace": "corrected", "fact_id": "F2",
                                                            "restore": True})[1])
    assert back["op"] == "RESTORE"
    assert len(json.loads(_call(mcp_url, "memory_facts", {"namespace": "corrected"})[1])["core_facts"]) == 1


SECOND_SESSION = """## 10 March 2024
Alice: My landlord raised the rent to 1,500 euros.
Bob: Ouch.
"""


def test_an_agents_second_session_appends_and_a_corrected_one_is_refused_with_the_difference(mcp_url):
    ns = "alice-sessions"
    assert json.loads(_call(mcp_url, "memory_ingest", {"namespace": ns, "transcript": TRANSCRIPT})[1])[
        "messages_added"] == 3
    failed, text = _call(mcp_url, "memory_ingest", {"namespace": ns, "transcript": SECOND_SESSION})
    assert not failed, text
    report = json.loads(text)
    assert report["messages_added"] == 2 and report["messages_in_memory"] == 5
    assert any("stored as D2:1…D2:2" in w for w in report["warnings"]), report["warnings"]
    failed, text = _call(mcp_url, "memory_ingest", {"namespace": ns, "transcript": SECOND_SESSION})
    assert not failed and json.loads(text)["messages_added"] == 0, "a retried call adds nothing"
    corrected = TRANSCRIPT.replace("3 March 2024", "4 March 2024")
    failed, text = _call(mcp_url, "memory_ingest", {"namespace": ns, "transcript": corrected})
    assert failed and "D1:1 time" in text and "replace=true" in text, text
    failed, text = _call(mcp_url, "memory_ingest", {"namespace": ns, "transcript": corrected, "replace": True})
    assert not failed, text
    assert json.loads(text)["messages_in_memory"] == 5


def test_an_export_of_three_conversations_becomes_one_memory_over_mcp(mcp_url):
    from tests.io.test_placement import EXPORT

    failed, text = _call(mcp_url, "memory_ingest", {"namespace": "export", "transcript": EXPORT.read_text()})
    assert not failed, text
    assert json.loads(text)["messages_in_memory"] == 8


@pytest.mark.parametrize(("tool", "args", "said"), [
    ("memory_ask", {"namespace": "nobody", "question": "Anything?"}, "holds no memory yet: call memory_ingest first"),
    ("memory_ask", {"namespace": "ui-0123456789ab", "question": "Anything?"}, "belongs to a browser session"),
    ("memory_ingest", {"namespace": " ", "transcript": TRANSCRIPT}, "namespace is empty"),
    ("memory_ingest", {"namespace": "alice\u0007bell", "transcript": TRANSCRIPT}, "holds a control character"),
    ("memory_ingest", {"namespace": "x", "transcript": "{\"chats\": []}"}, "unknown JSON layout"),
    ("memory_facts", {"namespace": "nobody"}, "holds no memory yet"),
    ("memory_correct_fact", {"namespace": "ui-0123456789ab", "fact_id": "F1", "statement": "x"},
     "belongs to a browser session"),
    ("memory_forget_fact", {"namespace": "nobody", "fact_id": "F1"}, "holds no memory yet"),
    ("memory_forget_fact", {"namespace": "alice-agent", "fact_id": "F77"}, "No CoreFact 'F77'"),
    ("memory_correct_fact", {"namespace": "alice-agent", "fact_id": "F1", "when": "someday"},
     "when 'someday' is not a date"),
])
def test_bad_calls_are_refused_with_what_to_do(mcp_url, tool, args, said, capfd):
    failed, text = _call(mcp_url, tool, args)
    assert failed and said in text, text
    assert "Traceback" not in capfd.readouterr().err, "a refusal is not a server fault: no traceback in the log"


def test_an_agent_ingests_a_whatsapp_chat_log_and_settles_its_date_order(mcp_url):
    log = "[10/03/2024, 10:02] Ana: I adopted a beagle named Max.\n[10/03/2024, 10:03] Ben: Lovely!\n"
    failed, text = _call(mcp_url, "memory_ingest", {"namespace": "whatsapp", "transcript": log})
    assert failed and "--format chatlog-dmy" in text, text
    failed, text = _call(mcp_url, "memory_ingest", {"namespace": "whatsapp", "transcript": log,
                                                   "format": "chatlog-dmy"})
    assert not failed, text
    assert json.loads(text)["messages_in_memory"] == 2


def test_an_agent_leaves_do_not_remember_conversations_and_reasoning_out_unless_asked(mcp_url):
    from tests.io.test_histories import THINK, _conversation, _node_message

    export = json.dumps([
        _conversation("c1", [_node_message("user", ["Where should I move?"]), _node_message("assistant", [THINK])]),
        _conversation("c2", [_node_message("user", ["private"])], is_do_not_remember=True)])
    failed, text = _call(mcp_url, "memory_ingest", {"namespace": "dnr", "transcript": export})
    assert not failed, text
    report = json.loads(text)
    assert report["messages_in_memory"] == 2
    assert any("marked do-not-remember" in w for w in report["warnings"]), report["warnings"]
    assert any("reasoning block" in w for w in report["warnings"]), report["warnings"]
    failed, text = _call(mcp_url, "memory_ingest", {"namespace": "dnr", "transcript": export,
                                                   "include_do_not_remember": True})
    assert not failed, text
    assert json.loads(text)["messages_in_memory"] == 3


def test_a_retry_of_an_ingest_under_way_answers_at_once_and_another_namespace_never_waits_for_it(engine_factory):
    """A client that gives up on a long memory_ingest and calls again must not leave calls blocked on the
    namespace (they would fill the endpoint's workers): the retry answers at once that the build is under way
    and where it stands; an ingest into another namespace runs meanwhile; after the build, a call adds."""
    import json
    import threading
    import time

    from memsif.inspector.common import Inspector
    from memsif.inspector.tools import AgentTools

    release = threading.Event()

    class HeldEmbedder(HashEmbedder):  # alice's build holds in its embedding until released
        def embed_documents(self, texts):
            if any("cello" in t for t in texts):
                release.wait(30)
            return super().embed_documents(texts)

    slow = FakeLLM({"segment_judge": 0.3, "trajectory_judge": 0.6})
    tools = AgentTools(Inspector(engine_factory(llm=slow, embedder=HeldEmbedder())))
    transcript = TRANSCRIPT
    first: dict = {}
    worker = threading.Thread(target=lambda: first.update(json.loads(tools.memory_ingest("alice", transcript))))
    worker.start()
    time.sleep(1.0)  # the first build is under way, its judge waiting
    started = time.monotonic()
    retry = json.loads(tools.memory_ingest("alice", transcript))
    assert time.monotonic() - started < 2.0, "the retry waited for the build"
    assert retry["status"] == "building" and retry["messages_added"] == 0 and "s since it started" in retry["under_way"]
    other = json.loads(tools.memory_ingest("bob", "Bob: I moved to Lyon.\nAna: Nice!\n"))
    assert other["status"] == "built" and other["messages_added"] == 2 and worker.is_alive()
    release.set()
    worker.join(30)
    assert first["status"] == "built" and first["messages_added"] > 0
    again = json.loads(tools.memory_ingest("alice", transcript))
    assert again["status"] == "built" and again["messages_added"] == 0  # the same messages: stored once
