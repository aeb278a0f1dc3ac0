"""The one bundle of back-ends (``memsif.backends.Backends``): the model's profile resolved once when the model
loads, overridden in settings (``llm_profile``) and in tests (``profile=``); and the engine's parts, whose
methods the engine answers for (``memsif.engine.delegated.Delegated``)."""

from __future__ import annotations

import inspect

import pytest

from memsif import MemSIF, MemSIFConfig, ModelProfile
from memsif.backends import Backends
from memsif.engine.reads import Reads
from memsif.errors import ConfigError
from memsif.interaction import link
from memsif.llm.profiles import UNMEASURED
from memsif.store import MemoryStore
from tests.fakes import FakeLLM, HashEmbedder, TableEntities

QWEN = "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged, llama.cpp)"


def _named(name: str) -> FakeLLM:
    llm = FakeLLM()
    llm.name = name
    return llm


def test_the_profile_is_the_models_own_resolved_once_and_the_setting_or_a_test_overrides_it():
    qwen = Backends(MemSIFConfig(), llm=_named(QWEN))
    assert qwen.profile.match == "Qwen2.5-Coder-1.5B-Instruct" and qwen.profile.decision_point("segment_judge")
    qwen.llm.name = "renamed"  # resolved once: a later name changes nothing
    assert qwen.profile.match == "Qwen2.5-Coder-1.5B-Instruct"
    assert Backends(MemSIFConfig(), llm=_named("fake")).profile is UNMEASURED
    renamed = Backends(MemSIFConfig(llm_profile="qwen2.5-coder-1.5b-instruct"), llm=_named("my-finetune"))
    assert renamed.profile.match == "Qwen2.5-Coder-1.5B-Instruct"
    assert Backends(MemSIFConfig(llm_profile="unmeasured"), llm=_named(QWEN)).profile is UNMEASURED
    handed = ModelProfile("anything", links_trajectories=True)
    assert Backends(MemSIFConfig(llm_profile="unmeasured"), llm=_named(QWEN), profile=handed).profile is handed
    with pytest.raises(ConfigError, match="llm_profile 'GPT-9' names no measured model"):
        _ = Backends(MemSIFConfig(llm_profile="GPT-9"), llm=_named(QWEN)).profile
    assert MemSIFConfig.from_env({"MEMSIF_LLM_PROFILE": "unmeasured"}).model.llm_profile == "unmeasured"


def test_the_engines_decisions_read_the_profile_it_was_handed():
    """A profile handed to the engine reaches its steps: "auto" asks the trajectory judge only of a model whose
    profile links trajectories, and the engine says the threshold that follows."""
    cfg = MemSIFConfig(trajectory_link="auto")

    def engine(profile: ModelProfile | None) -> MemSIF:
        return MemSIF(cfg, llm=_named(QWEN), embedder=HashEmbedder(), entities=TableEntities(),
                      store=MemoryStore(in_memory=True),
                      profile=profile)

    assert engine(None).trajectory_threshold() == link.RULE.threshold
    trusted = engine(ModelProfile("x", links_trajectories=True))
    assert trusted.trajectory_threshold() == link.JUDGE_ALONE.threshold
    same_model = trusted.with_config(cfg.replace(top_k=3))
    assert same_model.backends.profile is trusted.backends.profile and same_model.locks is trusted.locks
    other_model = trusted.with_config(cfg.replace(llm_profile="unmeasured"))
    assert other_model.backends.profile is UNMEASURED


def test_the_engine_answers_for_its_parts_with_their_signatures_and_docstrings():
    engine = MemSIF(MemSIFConfig(), llm=FakeLLM(), embedder=HashEmbedder(), store=MemoryStore(in_memory=True))
    assert engine.facts == engine.reads.facts and engine.search == engine.searcher.search
    assert inspect.signature(engine.facts) == inspect.signature(engine.reads.facts)
    assert (Reads.facts.__doc__ or "") in (MemSIF.facts.__doc__ or "") and "reads.facts" in (MemSIF.facts.__doc__ or "")
    assert engine.namespaces() == [] and engine.has_memory("t") is False
