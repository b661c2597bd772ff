"""The suites every kind of tool source runs against itself.

A source's tests write a :class:`Fixture` that makes the source over a system serving three tools
(``echo``, ``failing``, ``blocking``) in the state a check asks for, and ``await run(fixture)``;
or, under pytest, turn each check into a test item with
:func:`amends_toolkit.conformance.pytest_plugin.conformance_tests`.
"""

from __future__ import annotations

from amends_toolkit.conformance._checks import (
    CHECKS,
    Check,
    assembled_by_assemble,
    concurrent_calls_get_their_own_answers,
    definitions_are_stored_as_json,
    definitions_are_the_same_each_time,
    definitions_have_distinct_names,
    down_is_unavailable,
    failing_is_call_failed,
    interrupted_call_stops,
    model_reads_no_secret,
    refused_credentials_are_authentication_errors,
    runs_in_a_runtime,
    toolkit_reads_failures_as_results,
    tools_run_again_after_a_failure,
    tools_run_by_the_names_they_list,
    unknown_tool_is_an_error_of_the_source,
    unreachable_is_unavailable,
)
from amends_toolkit.conformance._fixture import (
    STATES,
    BlockingCalls,
    BlockingLog,
    Fixture,
    Skipped,
    State,
)
from amends_toolkit.conformance._run import Results, run

__all__ = (
    "CHECKS",
    "STATES",
    "BlockingCalls",
    "BlockingLog",
    "Check",
    "Fixture",
    "Results",
    "Skipped",
    "State",
    "assembled_by_assemble",
    "concurrent_calls_get_their_own_answers",
    "definitions_are_stored_as_json",
    "definitions_are_the_same_each_time",
    "definitions_have_distinct_names",
    "down_is_unavailable",
    "failing_is_call_failed",
    "interrupted_call_stops",
    "model_reads_no_secret",
    "refused_credentials_are_authentication_errors",
    "run",
    "runs_in_a_runtime",
    "toolkit_reads_failures_as_results",
    "tools_run_again_after_a_failure",
    "tools_run_by_the_names_they_list",
    "unknown_tool_is_an_error_of_the_source",
    "unreachable_is_unavailable",
)
