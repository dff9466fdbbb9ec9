"""Every AgentDojo tool whose output can show an injection vector is mapped
`untrusted_output: true`, proved from AgentDojo's own data.

Each suite's environment is loaded with a distinct canary in every injection vector (the places
where AgentDojo's attacks put third-party text). Every tool is then called, each time over a
fresh copy, with the arguments of every task's ground truth (user and injection tasks) and,
one argument at a time, with every value the environment offers for it (every email, event
and file id, every channel, user, URL, hotel, city...). A tool whose result shows a canary
carries third-party text. Two reach checks keep the sweep honest: every vector must show up
somewhere and every tool must run without error at least once.
"""

from __future__ import annotations

import copy
import importlib
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_core import to_json

from governance.agentdojo import AGENTDOJO_SUITES, load_agentdojo_mapping, mapping_path


def _environment_values(suite: str, env: Any) -> dict[str, list[Any]]:
    """Argument values that reach the data, by parameter name, read off the environment."""
    values: dict[str, list[Any]] = defaultdict(list)
    if suite in ("workspace", "travel"):
        days = sorted(
            {event.start_time.date().isoformat() for event in env.calendar.events.values()}
        )
        values |= {"event_id": list(env.calendar.events), "day": days, "date": days, "query": [""]}
        values["email_id"] = list(env.inbox.emails)
    if suite == "workspace":
        values |= {"file_id": list(env.cloud_drive.files), "filename": [""]}
    if suite == "travel":
        hotels = [hotel.name for hotel in env.hotels.hotel_list]
        restaurants = [restaurant.name for restaurant in env.restaurants.restaurant_list]
        companies = [company.name for company in env.car_rental.company_list]
        places = env.hotels.hotel_list + env.restaurants.restaurant_list
        values |= {
            "hotel_names": [hotels],
            "hotel_name": hotels,
            "hotel": hotels,
            "restaurant_names": [restaurants],
            "restaurant": restaurants,
            "company_name": [companies],
            "company": companies,
            "city": sorted({place.city for place in places + env.car_rental.company_list}),
            "departure_city": sorted({flight.departure_city for flight in env.flights.flight_list}),
            "arrival_city": sorted({flight.arrival_city for flight in env.flights.flight_list}),
            "start_time": ["2024-05-20 10:00"],
            "end_time": ["2024-05-21 10:00"],
        }
    if suite == "banking":
        scheduled = env.bank_account.scheduled_transactions
        values |= {
            "file_path": list(env.filesystem.files),
            "n": [100],
            "id": [transaction.id for transaction in scheduled],
        }
    if suite == "slack":
        users = list(env.slack.users)
        values |= {
            "channel": list(env.slack.channels),
            "user": users,
            "recipient": users,
            "url": list(env.web.web_content),
        }
    return values


def _calls(suite: Any, name: str, env: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every ground-truth call, then each tool with one argument varied over its values."""
    seen: dict[str, list[dict[str, Any]]] = defaultdict(list)
    tasks = [*suite.user_tasks.values(), *suite.injection_tasks.values()]
    for task in tasks:
        for call in task.ground_truth(copy.deepcopy(env)):
            seen[call.function].append(dict(call.args))
            yield call.function, dict(call.args)
    offered = _environment_values(name, env)
    for tool in suite.tools:
        params = list(tool.parameters.model_json_schema().get("properties", {}))
        choices = {
            param: [args[param] for args in seen[tool.name] if param in args] + offered[param]
            for param in params
        }
        base = {param: options[0] for param, options in choices.items() if options}
        yield tool.name, base
        for param, options in choices.items():
            for option in options:
                yield tool.name, {**base, param: option}


def _shown_vectors(name: str, suite: Any) -> tuple[dict[str, set[str]], set[str], set[str]]:
    """(tool -> vectors its results showed, every vector, tools that ran without error)."""
    functions_runtime = importlib.import_module("agentdojo.functions_runtime")
    vectors = suite.get_injection_vector_defaults()
    canaries = {vector: f"PROCTORCANARY{index:03d}Q" for index, vector in enumerate(vectors)}
    env = suite.load_and_inject_default_environment(canaries)
    runtime = functions_runtime.FunctionsRuntime(suite.tools)
    shown: dict[str, set[str]] = defaultdict(set)
    ran: set[str] = set()
    for function, args in _calls(suite, name, env):
        result, error = runtime.run_function(copy.deepcopy(env), function, args)
        if error is None:
            ran.add(function)
        text = to_json(result, fallback=str).decode() + (error or "")
        shown[function] |= {vector for vector, canary in canaries.items() if canary in text}
    return shown, set(vectors), ran


@pytest.mark.parametrize("name", AGENTDOJO_SUITES)
def test_every_tool_whose_output_shows_an_injection_vector_is_mapped_untrusted(
    name: str, suites: dict[str, Any]
) -> None:
    suite = suites[name]
    mapping = load_agentdojo_mapping(mapping_path(name))

    shown, vectors, ran = _shown_vectors(name, suite)

    assert set().union(*shown.values()) == vectors, "the sweep must reach every vector"
    assert ran == {tool.name for tool in suite.tools}, "every tool must run at least once"
    unmarked = {
        tool: sorted(found)
        for tool, found in shown.items()
        if found and not mapping.tools[tool].untrusted_output
    }
    assert unmarked == {}
