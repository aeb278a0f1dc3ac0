"""Judge calibration against a model's measured decision point, and the labelled-pair measures of
``memsif.eval.judges`` (AUC, pair construction) on the dev conversations."""

import pytest

from memsif.config import MemSIFConfig
from memsif.errors import ConfigError
from memsif.eval import judges
from memsif.interaction.judge import YesNoJudge
from memsif.llm.profiles import profile_of
from memsif.prompts import Prompt, segment_judge
from tests import ROOT
from tests.conftest import LOCOMO_DEV, requires_shared
from tests.fakes import FakeLLM


class NamedFake(FakeLLM):
    name = "Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, packaged, llama.cpp)"


def test_a_measured_model_is_judged_against_its_decision_point():
    profile = profile_of(NamedFake.name)
    point = profile.decision_point("segment_judge")
    assert point is not None and 0.5 < point < 1.0
    llm = NamedFake({"segment_judge": lambda p: point if "same" in p.text else point - 0.05})
    judge = YesNoJudge(llm, segment_judge.content_free, "auto", profile)
    at, below = judge.score([Prompt("segment_judge", "v", "same"),
                             Prompt("segment_judge", "v", "other")])
    assert at.prob == pytest.approx(0.5) and at.raw == pytest.approx(point) and at.prior == point
    assert below.prob < 0.5  # raw 0.78 is "yes" for an uncalibrated threshold, "no" for this model
    assert "N/A" not in "".join(p.text for p in llm.calls["segment_judge"])  # no content-free probe


def test_unmeasured_models_keep_raw_probabilities_and_the_old_switch_still_works():
    llm = FakeLLM({"segment_judge": lambda p: 0.2 if "N/A" in p.text else 0.3})
    [raw] = YesNoJudge(llm, segment_judge.content_free, "auto").score([segment_judge.content_free()])
    assert raw.prior is None and raw.prob == pytest.approx(0.2)
    assert MemSIFConfig(judge_calibration=True).judge_calibration == "content-free"
    assert MemSIFConfig.from_env({"MEMSIF_JUDGE_CALIBRATION": "0"}).judge_calibration == "off"
    with pytest.raises(ConfigError, match="judge_calibration must be"):
        MemSIFConfig(judge_calibration="sometimes")


def test_roc_auc_counts_ties_half_and_needs_both_labels():
    assert judges.roc_auc([0.9, 0.8, 0.1], [1, 1, 0]) == 1.0
    assert judges.roc_auc([0.5, 0.5], [1, 0]) == 0.5
    assert judges.roc_auc([0.1, 0.9], [1, 0]) == 0.0
    with pytest.raises(ValueError, match="both"):
        judges.roc_auc([0.1], [1])


@requires_shared
def test_labelled_pairs_come_from_the_dev_conversations():
    from memsif.eval.data import load_locomo

    samples = load_locomo(LOCOMO_DEV)
    pairs = judges.segment_pairs(samples, 5, seed=1)
    assert [p.label for p in pairs] == [1, 0] * 15
    for pos, neg in zip(pairs[::2], pairs[1::2], strict=True):
        assert pos.ids[:3] == neg.ids[:3]  # the same context, another next message
        assert pos.ids[3].split(":")[0] != "" and neg.ids[3] != pos.ids[3]
    shifts = judges.labelled_shift_pairs(samples, judges_shift_file())
    assert len(shifts) == 41 and {p.label for p in shifts} == {0, 1}
    traj = judges.trajectory_pairs(samples, 4, seed=1)
    assert traj and {p.kind for p in traj} == {"same event", "other conversation", "same conversation, not evidence"}


def judges_shift_file():
    return ROOT / "benchmarks" / "quality" / "data" / "segment-shifts.jsonl"
