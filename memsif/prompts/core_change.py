"""CoreFact change questions (§3.3, Update / Supersede): does a newer statement of a person change what an
earlier one said? Yes/no, scored as P(yes) on short inputs (the two statements and their days), the form
the small model answers well; it picks among option letters at chance (``core_operation``).

Each wording of ``QUESTIONS`` was scored on the labelled state changes and not-changes of the dev
conversations (``benchmarks/quality/data/state-changes-conv*.jsonl``): ``benchmarks/quality/state_changes.py``.
On 42 changes against 46 pairs that both stay true, ROC AUC pooled: "outdated" 0.60, "no_longer" 0.64,
"same_thing_moved_on" 0.58, "replaces" 0.66; the mean P(yes) of "outdated" and "replaces" 0.66 (per
conversation 0.41 / 0.70 / 0.71). On the extractor's own statements in whole memories, 1 of the 18 changes it
made was right (``docs/results.md``). ``CHANGE`` names the wordings the
engine asks; both prompts share all but their last line, which a back-end that keeps the previous prompt's
key/value cache reads once.
"""

from __future__ import annotations

from datetime import datetime

from memsif.prompts import Prompt, clip
from memsif.timeparse import day_text

NAME = "core_change"
#: Wordings measured (name → question after the two statements); ``{who}`` is the subject.
QUESTIONS = {
    "outdated": "Now that {who} said the later one, is the earlier statement out of date?",
    "no_longer": "Given the later statement, is the earlier statement no longer true of {who}?",
    "same_thing_moved_on": ("Is the later statement about the same thing as the earlier one (the same plan, pet, "
                            "job, home, project, count or activity of {who}), telling how it stands now?"),
    "replaces": ("Should the later statement replace the earlier one in a memory of {who}'s life, because it "
                 "says how the same thing stands now?"),
}
#: The wordings the engine asks; their mean P(yes) is the change score.
CHANGE = ("outdated", "replaces")
#: Characters of each statement shown (a stored statement has at most 160).
STATEMENT_CHARS = 200


def version(*questions: str) -> str:
    """The prompt version of wordings, e.g. ``core_change/1:outdated+replaces`` (default: ``CHANGE``)."""
    return f"{NAME}/1:{'+'.join(questions or CHANGE)}"


def build(who: str, earlier: str, earlier_time: datetime | None, later: str, later_time: datetime | None,
          question: str = CHANGE[0], input_ids: tuple[str, ...] = ()) -> Prompt:
    """The two statements of ``who``, each with its day, then the question ``QUESTIONS[question]``.
    Raises KeyError for an unknown wording."""
    text = (f"Earlier ({day_text(earlier_time)}): {clip(earlier, STATEMENT_CHARS)}\n"
            f"Later ({day_text(later_time)}): {clip(later, STATEMENT_CHARS)}\n\n"
            + QUESTIONS[question].format(who=who))
    return Prompt(NAME, version(question), text, input_ids=input_ids)
