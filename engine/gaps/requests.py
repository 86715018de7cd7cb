"""Capability gaps as they happen: classify a need against the catalog and record it.

``classify`` decides, with the matcher, whether a need is available, known
but missing for an agent, or not in the catalog at all. ``request_capability``
and ``record_miss`` write to a ``GapLog``; ``engine.gaps.report`` reads it back.
"""

from __future__ import annotations

import logging

from ..catalog.answers import available_in, match_info
from ..catalog.lookup import match
from ..catalog.model import get_catalog
from ..common.text import validate_query
from ..matching.results import Match
from .log import GapLog, RecordStatus, clean_capability, clean_context

log = logging.getLogger("engine")

MIN_CONFIDENCE = 0.5  # matchConfidence is P(right): below 0.5 the answer is more likely wrong than right


def agents_with(capability_name: str) -> list[str]:
    """Ids of the agents whose record for this canonical capability says it is available."""
    return available_in(capability_name, get_catalog())


def is_miss(result: Match) -> bool:
    """True when a match found nothing, or something more likely wrong than right."""
    return result.name is None or result.confidence < MIN_CONFIDENCE


def classify(capability: str, agent: str | None = None) -> dict:
    """Where a need stands: "available", "unavailable" or "uncataloged", with the next step.

    With an agent, "available" means that agent has it. Without one, it
    means some agent has it (``availableIn`` lists which). Raises
    ``InvalidQueryError`` for unusable text and ``UnknownAgentError`` for an
    agent the catalog does not know.
    """
    catalog = get_catalog()
    text = clean_capability(capability)
    agent_id = catalog.agent(validate_query(agent, field="agent")).id if agent is not None else None
    result = match(text, k=3, agent=agent_id)
    head = {"agent": agent_id} if agent_id else {}
    if is_miss(result):
        return {
            **head,
            "state": "uncataloged",
            "capability": None,
            "next_action": "recorded",
            "match": match_info(result),
            "nearest": [{"name": c.name, "matchConfidence": c.confidence} for c in result.candidates],
            "note": "No catalog capability fits this need; it is noted as a candidate for the catalog.",
        }
    name = result.name
    have = agents_with(name)
    answer = {**head, "capability": name, "match": match_info(result)}
    if agent_id is not None and agent_id in have:
        args = {"agent": agent_id, "capability": name}
        pointer = {"tool": "lookup_capability", "arguments": args}
        return {**answer, "state": "available", "next_action": "use", "see": pointer}
    if agent_id is None and have:
        pointer = {"tool": "compare_capability", "arguments": {"capability": name}}
        return {**answer, "state": "available", "next_action": "use", "availableIn": have, "see": pointer}
    answer.update(state="unavailable", next_action="use_alternative", availableIn=have)
    if agent_id is not None:
        alternative = catalog.agents[agent_id].records[name].get("alternative")
        if alternative:
            answer["alternative"] = alternative
    else:
        records = {a.id: a.records[name] for a in catalog.agents.values()}
        answer["alternatives"] = {a: r["alternative"] for a, r in records.items() if r.get("alternative")}
    return answer


def request_capability(
    gap_log: GapLog, capability: str, agent: str | None = None, context: str | None = None
) -> dict:
    """Classify a need and record it: the answer of the ``request_capability`` tool.

    Raises ``InvalidQueryError`` / ``UnknownAgentError`` for bad input and
    ``RateLimitError`` when this process records too many requests. When the
    log is off or unusable the classification is still returned, with
    ``recorded: false``; an uncataloged need then gets ``next_action: "none"``.
    """
    text = clean_capability(capability)
    context = clean_context(context)
    answer = classify(text, agent)
    info = answer["match"]
    nearest = answer.get("nearest") or [
        {"name": info["resolvedTo"], "matchConfidence": info["matchConfidence"]}
    ]
    status = gap_log.record_request(
        text, agent=answer.get("agent"), context=context, state=answer["state"], nearest=nearest
    )
    answer["recorded"] = status.recorded
    if status.recorded:
        answer["timesAsked"] = status.count
        answer["acknowledgement"] = (
            "Recorded for the catalog's maintainers. Carry on helping the user with what is available."
        )
    else:
        answer["acknowledgement"] = f"Not recorded: {status.reason}."
        if answer["next_action"] == "recorded":
            answer["next_action"] = "none"
    return answer


def record_miss(gap_log: GapLog, answer: dict, *, tool: str, agent: str | None = None) -> RecordStatus | None:
    """Record a lookup answer as a silent miss when it matched nothing or matched weakly.

    ``answer`` is what ``engine.answers`` returned; only its query, agent and
    nearest names go in the log. Returns None when the answer was no miss.
    Never raises: recording must not break the lookup it watches.
    """
    try:
        info = answer.get("match") or {}
        confidence = info.get("matchConfidence", 1.0)
        if answer.get("capability") is not None and confidence >= MIN_CONFIDENCE:
            return None
        query = info.get("query")
        if not isinstance(query, str):
            return None
        nearest = answer.get("nearest")
        if nearest is None and info.get("resolvedTo"):
            nearest = [{"name": info["resolvedTo"], "matchConfidence": confidence}]
        return gap_log.record_miss(query, tool=tool, agent=agent or answer.get("agent"), nearest=nearest)
    except Exception as exc:  # noqa: BLE001 - a broken record must not break the answer
        log.debug("silent miss not recorded: %s", exc)
        return RecordStatus(False, reason=str(exc))
