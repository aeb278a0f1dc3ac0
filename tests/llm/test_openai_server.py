"""The OpenAI-compatible back-end against a real server: llama-cpp-python's own ``llama_cpp.server``
serving the packaged Qwen2.5-Coder-1.5B-Instruct GGUF on a local port (the scale-out path: vLLM, TGI,
llama.cpp's server and Ollama speak the same protocol). A small ingest — segment and trajectory judges
scored through ``logprobs``, CoreFacts extracted through the server's JSON mode with a schema — and an
ask. Skipped, with the reason, where the server cannot start.
"""

import importlib.util
import subprocess
import sys

import pytest

from memsif.config import PACKAGED_LLM, MemSIFConfig
from memsif.records import BoundaryRule, SegmentDecision
from tests.conftest import free_port, wait_until_up
from tests.test_cli import TRANSCRIPT  # 8 messages over two sessions: a dog named Max, a tax return

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    """``python -m llama_cpp.server`` on the packaged GGUF; yields its ``…/v1`` URL."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (requirements.txt installs it)")
    try:
        import llama_cpp.server.app  # noqa: F401  (its [server] extra: fastapi, sse-starlette, starlette-context)
    except ImportError as exc:
        pytest.skip(f"llama_cpp.server cannot be imported ({exc}); pip install -r requirements-dev.txt")
    from memsif.llm import packaged_gguf
    from memsif.llm.llamacpp_cpu import choose_cpu_library

    choose_cpu_library()  # the server, a child, loads the CPU library MemSIF chose (GGML_BACKEND_PATH)
    folder, gguf_file = packaged_gguf(PACKAGED_LLM, MemSIFConfig.from_env().resolved_cache_dir)
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(folder / gguf_file),
                                 "--model_alias", "qwen", "--host", "127.0.0.1", "--port", str(port),
                                 "--n_ctx", "4096"], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    if (failed := wait_until_up(proc, url + "/models", log, 180, "llama_cpp.server")) is not None:
        pytest.skip(failed)
    yield url
    proc.terminate()
    proc.wait(30)


def test_an_ingest_and_an_ask_run_through_a_real_openai_compatible_server(server_url, tmp_path):
    from memsif.engine import MemSIF
    from memsif.io import load_transcripts

    path = tmp_path / "dog.txt"
    path.write_text(TRANSCRIPT)
    [transcript] = load_transcripts(path)
    engine = MemSIF(MemSIFConfig.from_env(data_dir=str(tmp_path / "data"), llm_backend="openai",
                                          llm_base_url=server_url, llm_model="qwen", llm_api_key=""))
    report = engine.ingest_transcript(transcript, "dog", core_facts=True)
    assert engine.llm.name == "qwen" and report.messages == 8
    assert report.judge_errors == 0, [d.error for d in engine.decisions("dog") if d.error]
    judged = [d for d in engine.decisions("dog", "segment")
              if isinstance(d, SegmentDecision) and d.rule == BoundaryRule.JUDGE]
    scored = [d.judge_prob for d in judged] + [c.judge_prob for d in engine.decisions("dog", "trajectory")
                                               for c in d.candidates if c.judge_prob is not None]
    assert scored and all(0.0 < p < 1.0 for p in scored), f"no judge call was scored through logprobs: {scored}"
    ops = engine.fact_log("dog")
    assert not [op.error for op in ops if op.error], "CoreFact extraction failed through the server"
    assert engine.llm.json_format == "json_object", "the server's JSON mode with a schema was not used"
    assert any("Max" in f.statement for f in engine.facts("dog")), [f.statement for f in engine.facts("dog")]
    answer = engine.ask("What is the name of Alice's puppy?", namespace="dog")
    assert "Max" in answer.answer and answer.tokens_in > 0, answer.answer
    engine.close()
