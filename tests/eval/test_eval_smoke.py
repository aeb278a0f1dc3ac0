"""Smoke evaluation through the CLI on a real packaged model: the first two sessions of one LoCoMo
conversation, a few questions, all three systems. It checks the harness's plumbing, not answer
quality, so it runs the packaged SmolLM2-135M (~1 min on 2 cores; the default 1.5B took 225 s of CI
here); the default model's every step is exercised by test_integration.py and the browser walk."""

import json
import re

import pytest

from memsif.cli import main
from memsif.llm.packaged import SMOLLM2
from tests.conftest import EXAMPLE

pytestmark = pytest.mark.integration


def _two_sessions(path):
    [item] = json.loads(EXAMPLE.read_text())
    conv = {k: v for k, v in item["conversation"].items()
            if not (m := re.match(r"session_(\d+)", k)) or int(m.group(1)) <= 2}
    qa = [q for q in item["qa"] if q.get("evidence") and all(str(e).startswith(("D1:", "D2:")) for e in q["evidence"])]
    path.write_text(json.dumps([{**item, "conversation": conv, "qa": qa}]))
    return path


def test_smoke_evaluation_of_all_three_systems(tmp_path, capsys):
    data = _two_sessions(tmp_path / "conv-26-two-sessions.json")
    out = tmp_path / "out"
    code = main(["--model", SMOLLM2, "eval", "locomo", "--data", str(data), "--system", "memsif,full-context,naive-rag",
                 "--limit", "2", "--data-dir", str(tmp_path / "mem"), "--out", str(out)])
    assert code == 0
    rows = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and {r["label"] for r in rows} == {"memsif", "full-context", "naive-rag"}
    assert len({r["qid"] for r in rows}) == 2, "every system answers the same questions"
    by_system = {label: [r for r in rows if r["label"] == label] for label in ("memsif", "full-context", "naive-rag")}
    assert [r["qid"] for r in by_system["memsif"]] == [r["qid"] for r in by_system["naive-rag"]], "same seeded order"
    for r in rows:
        assert 0.0 <= r["f1"] <= 1.0 and isinstance(r["llm_correct"], bool)
        # a question the memory holds nothing about is answered without the model (no tokens)
        assert r["recall_text"] is not None and (r["tokens"] > 0 or r["answer"].startswith("I don't know: nothing"))
    # Two sessions fit the 135M model's window whole: Full-Context sees every gold turn.
    assert all(r["recall_text"] == 1.0 for r in by_system["full-context"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["systems"]["memsif"]["cost"]["build_llm_calls"] > 0
    assert summary["diagnostics"]["sntd_random"] is not None
    assert "Evidence recall" in capsys.readouterr().out
