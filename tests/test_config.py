import pytest

from memsif.config import MemSIFConfig
from memsif.errors import ConfigError


def test_paper_defaults_table_13():
    cfg = MemSIFConfig()
    assert (cfg.alpha_segment, cfg.tau_merge, cfg.tau_split) == (0.8, 0.60, 0.325)
    assert (cfg.alpha_trajectory, cfg.top_k) == (0.8, 3)
    assert (cfg.theta_src, cfg.theta_qry) == (0.45, 0.45)


def test_env_overrides_are_typed():
    cfg = MemSIFConfig.from_env({"MEMSIF_TAU_MERGE": "0.7", "MEMSIF_TOP_K": "5", "MEMSIF_USE_SPACY": "no",
                                 "MEMSIF_LLM_BACKEND": "llamacpp"})
    assert cfg.tau_merge == 0.7 and cfg.top_k == 5 and cfg.use_spacy is False
    assert cfg.llm_backend == "llamacpp"


@pytest.mark.parametrize(("env", "message"), [
    ({"MEMSIF_TAU_SPLIT": "0.7"}, "tau_split"),
    ({"MEMSIF_ALPHA_SEGMENT": "1.5"}, "alpha_segment"),
    ({"MEMSIF_TOP_K": "three"}, "MEMSIF_TOP_K"),
    ({"MEMSIF_LLM_BACKEND": "openai"}, "MEMSIF_LLM_BASE_URL"),
])
def test_bad_values_say_what_to_fix(env, message):
    with pytest.raises(ConfigError, match=message):
        MemSIFConfig.from_env(env)


def test_the_package_exports_its_public_names_lazily():
    import memsif

    assert memsif.MemSIF.__name__ == "MemSIF" and memsif.load_transcripts.__module__.startswith("memsif.io")
    assert set(memsif.__all__) >= {"MemSIF", "MemSIFConfig", "load_transcripts", "__version__"}
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        memsif.nope  # noqa: B018


def test_settings_are_nested_by_concern_and_still_read_by_their_flat_names():
    from memsif.config import AnswerSettings, MethodSettings

    cfg = MemSIFConfig(tau_merge=0.55, context_tokens=700, llm_threads=1, data_dir="/tmp/x", core_schema="A:a")
    assert (cfg.method.tau_merge, cfg.answer.context_tokens, cfg.model.llm_threads) == (0.55, 700, 1)
    assert (cfg.store.data_dir, cfg.facts.core_schema) == ("/tmp/x", "A:a")
    assert cfg.tau_merge == cfg.setting("tau_merge") == 0.55 and cfg.top_k == cfg.method.construction_top_k
    # a whole concern, then single settings over it; the rest untouched
    other = cfg.replace(answer=AnswerSettings(context_tokens=400), flat_share=0.5)
    assert (other.answer.context_tokens, other.answer.flat_share, other.method) == (400, 0.5, cfg.method)
    assert cfg.answer.context_tokens == 700, "replace makes a copy"
    assert MemSIFConfig(method=MethodSettings(tau_merge=0.7)).tau_merge == 0.7
    assert hash(cfg) == hash(cfg.replace()) and cfg == cfg.replace()
    with pytest.raises(TypeError, match="no setting 'tau_merj'"):
        MemSIFConfig(tau_merj=0.5)
    with pytest.raises(AttributeError, match="tau_merj"):
        cfg.tau_merj  # noqa: B018
    with pytest.raises(ConfigError, match="tau_split"):
        cfg.replace(tau_split=0.6)


def test_every_setting_has_one_owner_and_one_environment_name():
    from dataclasses import fields

    from memsif.config import GROUPS, OWNER

    names = [f.name for kind in GROUPS.values() for f in fields(kind)]
    assert len(names) == len(set(names)), "a setting name in two concerns"
    env = {f"MEMSIF_{n.upper()}": "1"
           for n in ("fact_parallel", "context_tokens", "llm_threads", "judge_context_messages")}
    cfg = MemSIFConfig.from_env(env)
    assert (cfg.facts.fact_parallel, cfg.answer.context_tokens, cfg.model.llm_threads) == (1, 1, 1)
    assert OWNER["qdrant_url"] == "store" and OWNER["theta_src"] == "method"


def test_a_question_may_carry_its_own_answer_settings(engine_factory):
    from datetime import datetime

    from memsif.records import Message
    from tests.fakes import FakeLLM

    llm = FakeLLM({"answer": "Pottery."})
    engine = engine_factory(llm=llm)
    engine.ingest([Message(id="1", namespace="t", speaker="Ana", text="I love pottery and long walks by the sea.",
                           time=datetime(2023, 5, 8))])
    small = engine.config.answer.__class__(context_tokens=3, flat_share=0.0)
    assert engine.ask("What does Ana love?", namespace="t", answer=small).evidence_used == []
    assert engine.ask("What does Ana love?", namespace="t").evidence_used, "the engine's own settings again"
    assert engine.config.answer.context_tokens == 600


def test_the_old_api_module_still_offers_its_names_with_a_deprecation_warning():
    import memsif
    import memsif.api

    with pytest.warns(DeprecationWarning, match="import MemSIF from memsif"):
        assert memsif.api.MemSIF is memsif.MemSIF
    with pytest.warns(DeprecationWarning, match="the engine's inside now"):
        assert callable(memsif.api.trajectory_terms)
    with pytest.raises(AttributeError, match="decision_threshold"):
        memsif.api.decision_threshold  # noqa: B018  # now MemSIF.trajectory_threshold()
