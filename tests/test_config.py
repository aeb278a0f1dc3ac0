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
