"""Scoring for ``benchmark.py``: is the tool right, did the server resolve the arguments, was it a retry.

Arguments are compared by what they resolve to, never as strings: a capability
is right when the server's answer names the expected canonical capability
(``match.resolvedTo``, or the answer's ``capability``), agents are right when
``engine.resolve_agent`` gives the expected id, categories when the catalog
reads them as the expected category.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from engine import EngineError, get_catalog, resolve_agent

READ_TOOLS = ("lookup_capability", "compare_capability", "list_capabilities", "get_sources")
REQUEST_TOOL = "request_capability"
FREE_TEXT = {"context"}  # free-form arguments that are never scored
UNCALLABLE = {"malformed", "badJson", "unknownTool"}  # calls the server never saw: scored wrong


@dataclass
class CallResult:
    """One executed tool call: what was sent and what came back."""

    name: str | None
    arguments: dict | None
    text: str
    is_error: bool
    kind: str | None = None  # "malformed", "badJson", "unknownTool", "toolError"
    turn: int = 0

    @property
    def payload(self) -> dict | None:
        """The answer as JSON, or None for errors and non-JSON text."""
        if self.is_error:
            return None
        try:
            value = json.loads(self.text)
        except (json.JSONDecodeError, TypeError):
            return None
        return value if isinstance(value, dict) else None

    @property
    def status(self) -> str:
        """'error', 'no-match', 'ambiguous' or 'ok': what a model would react to."""
        if self.is_error:
            return "error"
        match = (self.payload or {}).get("match")
        if isinstance(match, dict):
            if match.get("resolvedTo") is None and "resolvedTo" in match:
                return "no-match"
            if match.get("ambiguous"):
                return "ambiguous"
        return "ok"


def resolved_capability(payload: dict | None) -> str | None:
    """The canonical capability a tool answer resolved to, or None."""
    if not payload:
        return None
    match = payload.get("match")
    if isinstance(match, dict) and "resolvedTo" in match:
        return match["resolvedTo"]
    capability = payload.get("capability")
    if isinstance(capability, dict):
        return capability.get("name")
    return capability if isinstance(capability, str) else None


def _agent_ids(value: object) -> set[str | None]:
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else [value]
    return {resolve_agent(v) if isinstance(v, str) else None for v in values}


def check_arguments(tool: str, expected: dict, call: CallResult, *, uncataloged: bool = False) -> list[str]:
    """Why the call's arguments are wrong; an empty list means right and resolved by the server."""
    if call.is_error:
        return [f"the call failed: {call.text[:200]}"]
    catalog = get_catalog()
    given = {k: v for k, v in (call.arguments or {}).items() if v is not None}
    problems = []
    for key, want in expected.items():
        got = given.get(key)
        if key in FREE_TEXT:
            continue
        if key == "agent":
            if not isinstance(got, str) or resolve_agent(got) != want:
                problems.append(f"agent {got!r} does not resolve to {want}")
        elif key == "agents":
            ids = _agent_ids(got) if got else set(catalog.agent_ids)  # none given means all agents
            if not set(want) <= ids:
                problems.append(f"agents {got!r} do not cover {want}")
        elif key == "category":
            try:
                ok = isinstance(got, str) and catalog.category(got) == want
            except EngineError:
                ok = False
            if not ok:
                problems.append(f"category {got!r} is not {want}")
        elif key == "capability":
            problems.extend(_check_capability(got, want, call.payload, uncataloged, catalog))
        elif got != want:
            problems.append(f"{key} {got!r} is not {want!r}")
    for key in sorted(given.keys() - expected.keys()):
        if key in FREE_TEXT or (tool == REQUEST_TOOL and key == "agent"):
            continue
        if key == "agents" and _agent_ids(given[key]) >= set(catalog.agent_ids):
            continue
        problems.append(f"unexpected argument {key}={given[key]!r} narrows the answer")
    return problems


def _check_capability(got: object, want: str, payload: dict | None, uncataloged: bool, catalog) -> list[str]:
    if not isinstance(got, str) or not got.strip():
        return [f"capability {got!r} is missing or empty"]
    names = {cap.name for cap in catalog.capabilities}
    resolved = resolved_capability(payload)
    if uncataloged:
        state = (payload or {}).get("state")
        if state is not None and state != "uncataloged":
            return [f"capability {got!r} was classified '{state}', expected 'uncataloged'"]
        if state is None and resolved in names:
            return [f"capability {got!r} resolved to catalog capability {resolved!r}; expected none"]
        return []
    if resolved == want:
        return []
    missing = "" if want in names else f" ('{want}' is not in this server's catalog)"
    return [f"capability {got!r} resolved to {resolved!r}, expected {want!r}{missing}"]


def retry_reasons(calls: list[CallResult], *, scenario: bool) -> list[str]:
    """Why a prompt counts as retried: a repeated tool, or any call after an error, no-match or ambiguity.

    A scenario's flow calls the same tool several times on purpose, so there a
    repeat only counts when the tool and its arguments are the same.
    """
    reasons, seen = [], set()
    bad_before: str | None = None  # status of an earlier turn's failed call, which the model has seen
    by_turn: dict[int, list[CallResult]] = {}
    for call in calls:
        by_turn.setdefault(call.turn, []).append(call)
    for turn in sorted(by_turn):
        for call in by_turn[turn]:
            key = (call.name, json.dumps(call.arguments, sort_keys=True)) if scenario else call.name
            if bad_before:
                reasons.append(f"{call.name} called after {bad_before}")
            elif key in seen:
                reasons.append(f"{call.name} called again")
            seen.add(key)
        statuses = [c.status for c in by_turn[turn] if c.status != "ok"]
        bad_before = bad_before or (statuses[0] if statuses else None)
    return reasons


def score_prompt(prompt: dict, calls: list[CallResult], llm_error: str | None = None) -> dict:
    """Invocation, arguments, retries and (for scenarios) call count and flow coverage for one prompt."""
    expected_tool = prompt["expectedTool"]
    first = calls[0] if calls else None
    if first is None:
        # An API failure before any call says nothing about tool choice: wrong even for no-tool prompts.
        invoked = expected_tool is None and not llm_error
    else:
        invoked = first.name == expected_tool and first.kind not in UNCALLABLE
    score: dict = {"invocationCorrect": invoked}
    scenario = prompt.get("scenario")
    if scenario:
        steps = scenario["flow"]
        covered = [_step_covered(step, calls) for step in steps]
        required = [c for c, step in zip(covered, steps, strict=True) if not step.get("optional")]
        score["argumentsCorrect"] = all(required)
        score["argumentProblems"] = [
            f"flow step {i + 1} ({step['tool']} {json.dumps(step['args'])}) not done"
            for i, (ok, step) in enumerate(zip(covered, steps, strict=True))
            if not ok and not step.get("optional")
        ]
        score["callCount"] = len(calls)
        score["callsInRange"] = scenario["calls"]["min"] <= len(calls) <= scenario["calls"]["max"]
        score["flowCovered"] = f"{sum(required)}/{len(required)}"
    elif expected_tool is None:
        score["argumentsCorrect"] = None
    else:
        target = next((c for c in calls if c.name == expected_tool), None)
        if target is None:
            problems = [f"{expected_tool} was never called"]
        else:
            problems = check_arguments(
                expected_tool, prompt["expectedArgs"], target, uncataloged=prompt.get("uncataloged", False)
            )
        score["argumentsCorrect"] = not problems
        score["argumentProblems"] = problems
    reasons = retry_reasons(calls, scenario=bool(scenario))
    score["retried"] = bool(reasons)
    score["retryReasons"] = reasons
    return score


def _step_covered(step: dict, calls: list[CallResult]) -> bool:
    return any(c.name == step["tool"] and not check_arguments(step["tool"], step["args"], c) for c in calls)


def asked_agents(prompt: dict) -> list[str]:
    """The agents a prompt asks about (all when it names none); the raw-JSON baseline reads their files."""
    catalog = get_catalog()
    arg_sets = [prompt.get("expectedArgs") or {}]
    if prompt.get("scenario"):
        arg_sets += [step["args"] for step in prompt["scenario"]["flow"]]
    ids: list[str] = []
    for args in arg_sets:
        for key in ("agent", "agents"):
            if args.get(key):
                ids.extend(i for i in _agent_ids(args[key]) if i)
    return list(dict.fromkeys(ids)) or catalog.agent_ids


def names_not_in_catalog(prompt: dict) -> list[str]:
    """Expected capability names missing from this server's catalog; the prompt fails until they land."""
    if prompt.get("uncataloged"):
        return []
    names = {cap.name for cap in get_catalog().capabilities}
    arg_sets = [prompt.get("expectedArgs") or {}]
    if prompt.get("scenario"):
        arg_sets += [step["args"] for step in prompt["scenario"]["flow"]]
    wanted = [args["capability"] for args in arg_sets if args.get("capability")]
    return sorted({name for name in wanted if name not in names})
