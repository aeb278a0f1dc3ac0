"""A method of an object that one of the parts it holds carries out (``MemSIF.facts`` is ``MemSIF.reads.facts``,
``CoreFactBuilder.consolidate`` its ``consolidator``'s)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")


class Delegated(Generic[P, R]):
    """``facts = Delegated("reads", Reads.facts)`` in the engine's class makes ``engine.facts(...)`` call
    ``engine.reads.facts(...)``, typed with the part's signature and documented by its docstring, so each
    method is written, documented and tested once, where its part lives."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.part, self.name, self.method = part, method.__name__, method
        self.__doc__ = f"``{part}.{method.__name__}``: {method.__doc__ or ''}"

    @overload
    def __get__(self, engine: None, owner: type | None = None) -> Delegated[P, R]: ...

    @overload
    def __get__(self, engine: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(self, engine: object | None, owner: type | None = None) -> Delegated[P, R] | Callable[P, R]:
        if engine is None:
            return self
        bound: Callable[P, R] = getattr(getattr(engine, self.part), self.name)
        return bound
