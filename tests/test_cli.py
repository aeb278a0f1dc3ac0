"""The command line on the real packaged models: ingest --json, show --json, errors."""

import json
import subprocess
import sys

import pytest

TRANSCRIPT = """## 8 May 2023
Alice: I adopted a beagle puppy named Max last week.
Bob: Congrats! How is Max settling in?
Alice: He chews everything, my shoes included.
Bob: Puppies do that. Did you try chew toys?
Alice: Switching topics, my tax return is due on Friday.
Bob: Did you file the forms for your freelance income?
## 20 June 2023
Alice: Max graduated from puppy school today!
Bob: Great news, he must be calmer now.
"""


def _run(*args: str, data_dir) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsif", *args, "--data-dir", str(data_dir)],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.integration
def test_ingest_json_then_show(tmp_path):
    path = tmp_path / "chat.txt"
    path.write_text(TRANSCRIPT)
    out = _run("ingest", str(path), "--json", "--no-progress", "--no-facts", data_dir=tmp_path / "d")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("namespace", "messages", "segments", "trajectories", "judge_calls_segment",
                "judge_calls_trajectory", "seconds"):
        assert key in summary
    assert summary["namespace"] == "chat" and summary["messages"] == 8
    assert summary["llm"]["backend"] == "llama.cpp" and summary["llm"]["fallback_from"] == "", summary["llm"]
    shown = _run("show", "--namespace", "chat", "--json", data_dir=tmp_path / "d")
    assert shown.returncode == 0, shown.stderr
    memory = json.loads(shown.stdout.strip().splitlines()[-1])
    assert len(memory["segments"]) == summary["segments"]
    assert [m for s in memory["segments"] for m in s["message_ids"]] == [
        "D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D1:6", "D2:1", "D2:2"]
    assert memory["segments"][0]["boundary"]["rule"] == "first"
    again = _run("ingest", str(path), "--json", "--no-progress", "--no-facts", data_dir=tmp_path / "d")
    assert json.loads(again.stdout.strip().splitlines()[-1])["messages"] == 0

    exported = _run("export", str(tmp_path / "chat.json.gz"), "--namespace", "chat", "--decimals", "4",
                    data_dir=tmp_path / "d")
    assert exported.returncode == 0 and "8 messages" in exported.stdout, exported.stderr
    imported = _run("import", str(tmp_path / "chat.json.gz"), "--namespace", "copy", data_dir=tmp_path / "d2")
    assert imported.returncode == 0 and "copy: 8 messages" in imported.stdout, imported.stderr
    copy = json.loads(_run("show", "--namespace", "copy", "--json", data_dir=tmp_path / "d2").stdout.splitlines()[-1])
    assert [s["message_ids"] for s in copy["segments"]] == [s["message_ids"] for s in memory["segments"]]
    twice = _run("import", str(tmp_path / "chat.json.gz"), "--namespace", "copy", data_dir=tmp_path / "d2")
    assert twice.returncode == 2 and "already holds memory" in twice.stderr and "Traceback" not in twice.stderr


def test_malformed_file_is_a_clear_error_with_exit_code_2(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"speaker": "a"}\n')
    out = _run("ingest", str(path), data_dir=tmp_path / "d")
    assert out.returncode == 2
    assert "bad.jsonl" in out.stderr and "line 1" in out.stderr
    assert "Traceback" not in out.stderr


def test_show_unknown_namespace(tmp_path):
    out = _run("show", "--namespace", "nope", data_dir=tmp_path / "d")
    assert out.returncode == 2 and "No memory in namespace 'nope'" in out.stderr


def test_the_read_commands_read_a_snapshot_while_another_process_holds_the_folder(engine_factory, tmp_path):
    """The app (here: this process) holds the embedded folder; ``namespaces``, ``show`` and ``facts``
    read a snapshot taken when each runs, say so, and see what the holder added since; a writer is
    still refused with what to do."""
    from memsif.store import MemoryStore
    from tests.conftest import make_messages
    from tests.fakes import FakeLLM, HashEmbedder

    holder = engine_factory(llm=FakeLLM({"segment_judge": 0.5, "trajectory_judge": 0.5}),
                            embedder=HashEmbedder(dim=384, name="all-MiniLM-L6-v2"),
                            store=MemoryStore(path=tmp_path / "d" / "qdrant"))
    texts = ["I adopted a beagle named Max.", "Max chews my shoes.", "My tax return is due Friday."]
    holder.ingest(make_messages(texts[:2], namespace="alice"), namespace="alice")

    listed = _run("namespaces", "--json", data_dir=tmp_path / "d")
    assert listed.returncode == 0, listed.stderr
    assert "a snapshot of" in listed.stderr and "a read never holds the folder" in listed.stderr, listed.stderr
    [row] = json.loads(listed.stdout.strip().splitlines()[-1])["namespaces"]
    assert row["namespace"] == "alice" and row["messages"] == 2 and row["segments"] == len(holder.segments("alice"))

    holder.ingest(make_messages(texts, namespace="alice"), namespace="alice")  # the app goes on writing
    shown = _run("show", "--namespace", "alice", "--json", data_dir=tmp_path / "d")
    assert shown.returncode == 0, shown.stderr
    memory = json.loads(shown.stdout.strip().splitlines()[-1])
    assert [s["message_ids"] for s in memory["segments"]] == [s.message_ids for s in holder.segments("alice")]
    assert _run("facts", "--namespace", "alice", data_dir=tmp_path / "d").returncode == 0

    path = tmp_path / "more.txt"
    path.write_text("Alice: Max graduated from puppy school.\n")
    refused = _run("ingest", str(path), "--namespace", "alice", data_dir=tmp_path / "d")
    assert refused.returncode == 2 and "in use by another MemSIF process" in refused.stderr, refused.stderr
    assert len(holder.messages("alice")) == 3, "a refused writer changed the memory"
    corrected = _run("facts", "delete", "--namespace", "alice", "F1", data_dir=tmp_path / "d")
    assert corrected.returncode == 2 and "make the change in its page" in corrected.stderr, corrected.stderr


def test_the_shell_sees_a_memory_grow_while_it_is_built(engine_factory, tmp_path):
    """An ingest writes its structure every ``persist_every`` messages: ``namespaces`` run from a shell in
    the middle of a build lists the namespace with the messages placed so far."""
    from memsif.store import MemoryStore
    from tests.conftest import make_messages
    from tests.fakes import FakeLLM, HashEmbedder

    seen = []
    calls = iter(range(10_000))

    def judge(prompt):  # a shell beside the build, once, in its middle
        if next(calls) == 15:
            listed = _run("namespaces", "--json", data_dir=tmp_path / "d")
            seen.append(json.loads(listed.stdout.strip().splitlines()[-1])["namespaces"] if listed.stdout else listed)
        return 0.5

    holder = engine_factory(llm=FakeLLM({"segment_judge": judge, "trajectory_judge": 0.1}),
                            embedder=HashEmbedder(dim=384, name="all-MiniLM-L6-v2"), persist_every=10,
                            tau_merge=0.99, tau_split=0.01, store=MemoryStore(path=tmp_path / "d" / "qdrant"))
    holder.ingest(make_messages([f"Message {i} about the garden." for i in range(40)], namespace="ana"),
                  namespace="ana")
    [[row]] = seen
    assert row["namespace"] == "ana" and 0 < row["messages"] < 40 and row["messages"] % 10 == 0, row
