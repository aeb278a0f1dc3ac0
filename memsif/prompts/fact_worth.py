"""Something worth remembering (§3.3; DESIGN: a focused yes/no question, scored as P(yes)): would a
friend still want to know a CoreFact candidate a month later — an event, a plan, a possession, a
preference, a relation — or is it a passing remark (thanks, cheering, a mood)?
"""

from __future__ import annotations

from memsif.prompts import Prompt

NAME = "fact_worth"
VERSION = "fact_worth/1"


def build(subject: str, statement: str) -> Prompt:
    text = (f"Note about {subject}: {statement}\n\nIs this a concrete fact about {subject} (an event, plan, "
            "possession, preference, job or relationship) worth remembering a month from now, rather than a "
            "passing remark, thanks or mood?")
    return Prompt(NAME, VERSION, text)
