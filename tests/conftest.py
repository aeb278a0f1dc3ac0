from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from memsif.config import MemSIFConfig
from memsif.engine import MemSIF
from memsif.records import Message
from memsif.store import MemoryStore
from tests import ROOT
from tests.fakes import FakeLLM, HashEmbedder, TableEntities

SHARED = ROOT.parent / "shared"
LOCOMO_DEV = SHARED / "data" / "locomo" / "locomo_dev.json"
LONGMEMEVAL = SHARED / "data" / "longmemeval" / "longmemeval_synthetic.json"
EXAMPLE = ROOT / "assets" / "locomo-conv-26.json"

#: Tests that read the dev data beside the checkout (present in CI) skip cleanly where it is absent.
requires_shared = pytest.mark.skipif(not LOCOMO_DEV.exists() or not LONGMEMEVAL.exists(),
                                     reason="../shared/data is not beside this checkout")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "integration" not in item.keywords:
            item.add_marker(pytest.mark.unit)


def make_messages(texts: list[str], namespace: str = "t", speaker: str = "A") -> list[Message]:
    return [Message(id=f"D1:{i + 1}", namespace=namespace, speaker=speaker, text=t,
                    time=datetime(2023, 5, 8), session_id="session_1", index=i) for i, t in enumerate(texts)]


@pytest.fixture
def fake_llm() -> FakeLLM:
    return FakeLLM()


@pytest.fixture
def engine_factory(tmp_path):
    """Build an engine with fakes; ``config`` keyword overrides go into MemSIFConfig."""
    engines = []

    def build(llm=None, embedder=None, entities=None, store=None, profile=None, **config):
        config.setdefault("core_facts", False)  # Structured Interaction Memory tests need no fact LLM
        # the fake's scripted core_operation replies stand in for a model trusted with the choice
        config.setdefault("fact_operation", "model")
        # the relevance floor is measured for the real embedder; the fakes' cosines have another scale
        config.setdefault("relevance_floor", 0.0)
        # model-written segment titles are one more generation per segment: their own tests ask for them
        config.setdefault("segment_titles", "rule")
        cfg = MemSIFConfig(data_dir=str(tmp_path / "data"), **config)
        engine = MemSIF(cfg, llm=llm or FakeLLM(), embedder=embedder or HashEmbedder(),
                        entities=entities or TableEntities(), store=store or MemoryStore(in_memory=True),
                        profile=profile)
        engines.append(engine)
        return engine

    yield build
    for engine in engines:
        engine.close()


def serve_on_fakes(llm: FakeLLM, data_dir: Path, entities=None, **config):
    """The inspector on fakes (the given LLM, a hashing embedder, in-memory Qdrant; ``config`` keyword
    overrides go into MemSIFConfig): yields (its URL, its ``Inspector``), then closes it (a fixture's
    body: ``yield from serve_on_fakes(...)``)."""
    from memsif.inspector import PAGE_CSS, PAGE_I18N, build_demo

    demo = build_demo(MemSIF(MemSIFConfig(data_dir=str(data_dir), **config), llm=llm, embedder=HashEmbedder(),
                             entities=entities or TableEntities(), store=MemoryStore(in_memory=True)))
    demo.queue(default_concurrency_limit=4)
    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True, css=PAGE_CSS, i18n=PAGE_I18N)  # as app.py
    yield url, demo.inspector
    demo.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(proc, url: str, log: Path, seconds: float, what: str) -> str | None:
    """Poll ``url`` until it answers; None when it does, else why not (``what`` exited, or did not answer
    within ``seconds``; the tail of its ``log``). A process that never answered is killed."""
    import time
    import urllib.request

    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return None
        except OSError:
            if proc.poll() is not None:
                return f"{what} exited with {proc.returncode}: {log.read_text()[-2000:]}"
            time.sleep(0.5)
    proc.kill()
    return f"{what} did not answer within {seconds:.0f} s: {log.read_text()[-2000:]}"
