"""The configurable CoreFact schema Y_core (§3.3, App. C.1). Fixed before construction."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FactType:
    name: str
    description: str


#: The paper's LoCoMo/LongMemEval schema (App. C.1).
DEFAULT_SCHEMA: tuple[FactType, ...] = (
    FactType("Identity", "static attributes such as occupation, location, identity"),
    FactType("Event", "time-anchored occurrences such as travel, achievements, things done"),
    FactType("Preference", "subjective attitudes: likes and dislikes in food, entertainment, career"),
    FactType("Relation", "social ties such as family, friends, colleagues"),
)


def parse_schema(text: str) -> tuple[FactType, ...]:
    """``"Identity:desc;Event:desc"`` (MEMSIF_CORE_SCHEMA) → fact types; empty text → the default."""
    if not text.strip():
        return DEFAULT_SCHEMA
    types = []
    for part in text.split(";"):
        name, _, description = part.partition(":")
        if name.strip():
            types.append(FactType(name.strip(), description.strip() or name.strip()))
    return tuple(types)
