"""LLM back-ends: the OpenAI-compatible client against a mock server; the transformers class on a local path."""

import json
import math

import httpx
import pytest

from memsif.config import MemSIFConfig
from memsif.errors import LLMError, LLMOutputError
from memsif.llm.openai_backend import OpenAICompatibleLLM
from memsif.llm.packaged import SMOLLM2
from memsif.prompts import Prompt


def _server(top_logprobs, status=200):
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if status != 200:
            return httpx.Response(status, text="model not loaded")
        if body.get("logprobs"):
            content = [{"token": top_logprobs[0][0], "logprob": top_logprobs[0][1],
                        "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top_logprobs]}]
            choice = {"message": {"content": "x"}, "logprobs": {"content": content}}
            return httpx.Response(200, json={"choices": [choice]})
        return httpx.Response(200, json={"choices": [{"message": {"content": "Paris."}}],
                                         "usage": {"prompt_tokens": 12, "completion_tokens": 2}})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    return OpenAICompatibleLLM("http://server/v1", "m", client=client), seen


def test_openai_yes_probability_from_logprobs():
    llm, seen = _server([("Yes", math.log(0.6)), (" no", math.log(0.2)), ("Maybe", math.log(0.2))])
    [p] = llm.yes_probability([Prompt("segment_judge", "v", "Same topic?")])
    assert p == pytest.approx(0.75)
    assert seen[0]["max_tokens"] == 1 and seen[0]["temperature"] == 0.0 and seen[0]["model"] == "m"


def test_openai_without_answer_tokens_is_an_output_error():
    llm, _ = _server([("Maybe", -0.1), ("Perhaps", -2.0)])
    with pytest.raises(LLMOutputError, match="neither yes nor no"):
        llm.yes_probability([Prompt("segment_judge", "v", "Same topic?")])


def test_openai_generate_and_http_errors():
    llm, _ = _server([])
    gen = llm.generate(Prompt("answer", "v", "Capital of France?"), max_new_tokens=8)
    assert (gen.text, gen.tokens_in, gen.tokens_out) == ("Paris.", 12, 2)
    bad, _ = _server([], status=503)
    with pytest.raises(LLMError, match="503"):
        bad.generate(Prompt("answer", "v", "?"))


@pytest.mark.parametrize(("status", "said"), [
    (422, '{"detail": "response_format.type: Input should be text or json_object"}'),
    (500, '{"error": {"message": "1 validation error: type: expected \'text\' or \'json_object\'"}}')])
def test_openai_constrained_json_falls_back_to_the_json_mode_a_server_takes(status, said):
    """llama-cpp-python's server refuses OpenAI's json_schema response format (with a 500 that holds
    its validation error; others with 422) and takes {"type": "json_object", "schema": …}; the
    back-end switches once and keeps the form that works."""
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body.get("response_format"))
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return httpx.Response(status, text=said)
        return httpx.Response(200, json={"choices": [{"message": {"content": '{"facts": []}'}}]})

    llm = OpenAICompatibleLLM("http://server/v1", "m", client=httpx.Client(transport=httpx.MockTransport(handler)))
    schema = {"type": "object", "properties": {"facts": {"type": "array"}}}
    for _ in range(2):
        assert llm.generate(Prompt("core_extract", "v", "Facts?"), json_schema=schema).text == '{"facts": []}'
    assert [f["type"] for f in seen] == ["json_schema", "json_object", "json_object"]
    assert seen[1]["schema"] == schema and llm.json_format == "json_object"
    plain, _ = _server([], status=422)  # a refusal of a request without a schema is not retried
    with pytest.raises(LLMError, match="422"):
        plain.generate(Prompt("answer", "v", "?"))
    broken, _ = _server([], status=500)  # nor a server fault that is not about the format
    with pytest.raises(LLMError, match="500"):
        broken.generate(Prompt("core_extract", "v", "Facts?"), json_schema=schema)
    assert broken.json_format == "json_schema"


@pytest.mark.integration
def test_transformers_class_loads_a_local_folder():
    """The de-quantised cache of the packaged GGUF is a plain local model folder: the same class
    loads it as it would any local path or hub id."""
    from memsif.llm import load_llm, packaged_gguf
    from memsif.llm.transformers_backend import TransformersLLM, _gguf_cache_dir

    config = MemSIFConfig.from_env(llm_model=SMOLLM2, llm_backend="transformers")
    load_llm(config)  # makes sure the cache exists
    folder, gguf_file = packaged_gguf(config.llm_model, config.resolved_cache_dir)
    local = _gguf_cache_dir(config.resolved_cache_dir, str(folder), gguf_file)
    llm = TransformersLLM.from_config(config.replace(llm_model=str(local)))
    assert llm.name == str(local)
    [p] = llm.yes_probability([Prompt("x", "v", "Is Paris in France?")])
    assert 0.0 < p < 1.0
    assert llm.count_tokens("hello world") >= 2


@pytest.mark.integration
def test_prefix_reuse_gives_the_full_pass_probabilities():
    """Scored calls compute a shared prefix once (within a batch, and with the previous call's
    prompt); in float32 the next-token distribution equals one full forward pass per prompt."""
    torch = pytest.importorskip("torch")
    from memsif.llm import load_llm

    llm = load_llm(MemSIFConfig.from_env(llm_model=SMOLLM2, llm_backend="transformers", llm_dtype="float32"))

    def full_pass(prompt):
        ids = llm._tok(llm._render(prompt), return_tensors="pt", add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            logits = llm._model(input_ids=ids, use_cache=False, logits_to_keep=1).logits[0, -1].float()
        return torch.softmax(logits, -1)

    new = "Later conversation:\nA: I went hiking with my dog last weekend.\n\nEarlier conversation:\n"
    candidates = [Prompt("t", "v", new + f"B: {text}\n\nSame event?")
                  for text in ("I adopted a dog.", "My car broke down and a tow truck came an hour later.", "hi")]
    follow = [Prompt("s", "v", "Chat so far:\nA: hello there\n\nNext message:\nB: cats?\n\nSame topic?")]
    other = [Prompt("s", "v", "Chat so far:\nA: Paris, mostly\n\nNext message:\nB: and trains\n\nSame topic?")]
    for batch in (candidates, follow, other, candidates, candidates[1:2], follow):
        got = llm._last_token_probs(batch)
        want = torch.stack([full_pass(p) for p in batch])
        assert got.shape == want.shape
        assert float((got - want).abs().max()) < 1e-4
    assert len(llm._kv_ids) > 10  # the last prompt is kept for the next call


@pytest.mark.integration
def test_llamacpp_backend_scores_and_generates():
    """llama.cpp scores the packaged GGUF and generates (where it cannot run, the probe's LLMError says
    why: tests/llm/test_llamacpp_cpu.py)."""
    from memsif.llm import load_llm

    llm = load_llm(MemSIFConfig(llm_backend="llamacpp"))
    probs = llm.yes_probability([Prompt("x", "v", "Is Paris in France?"), Prompt("x", "v", "Is the sky green?")])
    assert all(0.0 < p < 1.0 for p in probs)
    assert llm.generate(Prompt("x", "v", "Say hi."), max_new_tokens=5).tokens_out >= 1


@pytest.mark.integration
def test_llamacpp_lets_a_chat_answer_in_between_two_tokens_of_a_corefact_extraction():
    """A chat answer asked while a CoreFact extraction generates runs between two of the extraction's
    tokens or two chunks of its prompt, not after its whole call (the extraction has a llama.cpp context
    of its own), and the extraction then writes the very reply and score it gives alone."""
    import threading
    import time

    from memsif.llm import load_llm
    from memsif.locks import interactive, job

    try:
        llm = load_llm(MemSIFConfig(llm_backend="llamacpp"))
    except LLMError as exc:
        assert "GGML_NATIVE=OFF" in str(exc)
        return
    long = Prompt("x", "v", "Name the first twenty prime numbers, one per line, with one sentence about each.")
    facts = llm.for_job("facts")  # CoreFact extraction's handle: its own context
    with job("extraction", "facts"):
        facts.generate(long, max_new_tokens=40)  # both timed runs below start from this cached prompt
        alone = facts.generate(long, max_new_tokens=40).text
    started, events, replies = threading.Event(), [], {}

    def extract():
        with job("extraction", "facts"):
            pieces = []
            for piece in facts.generate_stream(long, max_new_tokens=40):
                if isinstance(piece, str):
                    pieces.append(piece)
                    started.set()
            replies["extraction"] = "".join(pieces)
        events.append("extraction done")

    worker = threading.Thread(target=extract)
    worker.start()
    assert started.wait(120)
    with interactive():
        replies["chat"] = llm.generate(Prompt("x", "v", "Say hi."), max_new_tokens=5).text
    events.append("chat answered")
    worker.join(300)
    assert events == ["chat answered", "extraction done"]
    assert llm.pauses >= 1 and replies["chat"].strip()
    assert replies["extraction"] == alone

    # a long prompt is evaluated in chunks: a chat answer goes in between two of them, and the score
    # comes out as the shared context's one-piece evaluation gives it
    story = " ".join(f"On day {d} Ana watered the tomatoes and Ben fixed a bicycle wheel." for d in range(1, 40))
    judge = Prompt("x", "v", f"{story}\n\nDid Ana water the tomatoes?")
    (shared,) = llm.yes_probability([judge])
    pauses, events, scores = llm.pauses, [], {}

    def score():
        with job("extraction", "facts"):
            (scores["facts"],) = facts.yes_probability([judge])
        events.append("judge done")

    worker = threading.Thread(target=score)
    worker.start()
    time.sleep(1)  # the prompt (~650 tokens, ten chunks) takes ~9 s to evaluate on 2 AVX2 cores
    with interactive():
        llm.generate(Prompt("x", "v", "Say hi."), max_new_tokens=5)
    events.append("chat answered")
    worker.join(300)
    assert events == ["chat answered", "judge done"] and llm.pauses > pauses
    assert abs(scores["facts"] - shared) < 1e-3


def test_auto_dtype_is_the_faster_one_measured_on_this_cpu_and_cached(tmp_path):
    torch = pytest.importorskip("torch")
    from memsif.llm.transformers_backend import measured_cpu_dtype

    model = torch.nn.Linear(4, 4)
    timings = {torch.float32: 2.0, torch.bfloat16: 1.0}
    calls = []

    def timer(m):
        dtype = next(m.parameters()).dtype
        calls.append(dtype)
        return timings[dtype]

    assert measured_cpu_dtype(model, tmp_path, "m", timer=timer) == torch.bfloat16
    assert next(model.parameters()).dtype == torch.float32, "the measurement changed the model's weights"
    assert calls == [torch.float32, torch.bfloat16]
    choice = json.loads((tmp_path / "dtype-choice.json").read_text())
    assert [v["dtype"] for v in choice.values()] == ["bfloat16"]
    timings[torch.bfloat16] = 3.0  # cached: not measured again
    assert measured_cpu_dtype(model, tmp_path, "m", timer=timer) == torch.bfloat16 and len(calls) == 2
    assert measured_cpu_dtype(model, tmp_path, "other", timer=timer) == torch.float32 and len(calls) == 4


def test_streamed_generation_hands_over_each_piece_and_returns_the_whole_text():
    from memsif.llm import Generation, generate_streamed

    class Streaming:
        def generate_stream(self, prompt, max_new_tokens=512, temperature=0.1, stop=()):
            yield from ("Caro", "line ", "researched")
            yield Generation("Caroline researched", 12, 3)

        def generate(self, *args, **kwargs):
            raise AssertionError("a back-end that streams is not asked for the whole text")

    seen = []
    gen = generate_streamed(Streaming(), Prompt("answer", "v", "?"), seen.append)
    assert seen == ["Caro", "line ", "researched"] and gen == Generation("Caroline researched", 12, 3)
    llm, _ = _server([])  # no generate_stream: the whole text arrives once
    seen.clear()
    assert generate_streamed(llm, Prompt("answer", "v", "?"), seen.append).text == "Paris." and seen == ["Paris."]


@pytest.mark.integration
def test_llamacpp_decodes_a_wave_of_extraction_prompts_together_each_held_to_its_grammar(monkeypatch):
    """A wave of CoreFact extraction prompts decoded together on llama.cpp (one sequence each, their
    shared head read once): every reply finishes before the cap and parses to the schema, the tokens the
    grammar forces take no step of their own, the head stays cached for the next wave, and a job cancelled
    meanwhile stops at the next step."""
    from memsif.errors import JobCancelled
    from memsif.eval.data import load_locomo
    from memsif.facts.core import EXTRACT_MAX_TOKENS
    from memsif.llm import generate_many, load_llm
    from memsif.llm.structured import parse_json_reply
    from memsif.locks import cancel, job
    from memsif.prompts import core_extract
    from memsif.records import parse_schema
    from memsif.timeparse import day_text

    try:
        llm = load_llm(MemSIFConfig(llm_backend="llamacpp"))
    except LLMError as exc:
        assert "GGML_NATIVE=OFF" in str(exc)
        return
    messages = load_locomo("assets/locomo-conv-26.json")[0].messages
    schema = parse_schema("")
    prompts = [core_extract.build([(day_text(m.time), m.speaker, m.text) for m in messages[k:k + 4]], schema)
               for k in (0, 4, 8)]
    from memsif.llm.llamacpp_parallel import ParallelContext

    facts = llm.for_job("facts")
    reply_model = core_extract.response_schema(schema)
    steps = []
    decode = ParallelContext._decode
    monkeypatch.setattr(ParallelContext, "_decode", lambda self, rows: steps.append(any(r[3] for r in rows))
                        or decode(self, rows))
    with job("wave", "facts"):
        replies = generate_many(facts, prompts, max_new_tokens=EXTRACT_MAX_TOKENS, temperature=0.0,
                                json_schema=core_extract.grammar(reply_model))
    assert llm._parallel is not None, "the wave was not decoded together"
    longest = max(r.tokens_out for r in replies if not isinstance(r, Exception))
    assert sum(steps) < 0.8 * longest, f"{sum(steps)} steps for a reply of {longest} tokens: none was forced"
    for reply in replies:
        assert not isinstance(reply, Exception), reply
        assert 0 < reply.tokens_out < EXTRACT_MAX_TOKENS, reply.text
        parse_json_reply(reply.text, reply_model)  # raises on a reply the grammar should have refused
    head = len(llm._parallel._prefix)
    assert head > 300, "the prompts' shared instructions and example are not read once"
    with job("wave", "facts"):
        cancel("wave", "the memory was replaced")
        with pytest.raises(JobCancelled, match="replaced"):
            facts.generate_batch(prompts[:2], max_new_tokens=8, temperature=0.0)
    with pytest.raises(LLMError, match="greedily"):
        facts.generate_batch(prompts[:2], max_new_tokens=8, temperature=0.7)
