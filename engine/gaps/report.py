"""The gap report: requests and silent misses folded into ranked gaps for a maintainer.

Phrasings of one need are grouped with the engine's own MiniLM embeddings;
each gap is then classified against today's catalog as uncataloged (a
candidate capability), near a capability (probably its wording), an agent
lacking a catalog capability, or cataloged.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from ..catalog.lookup import match
from ..catalog.model import get_catalog
from ..common.text import validate_query
from ..errors import EngineError, InvalidQueryError
from ..matching.encoder import Encoder, EncoderUnavailableError
from ..matching.index import default_encoder
from .log import GapLog, strip_controls
from .requests import agents_with, is_miss

log = logging.getLogger("engine")

GROUP_THRESHOLD = 0.325
"""Average-link cosine at or above which two groups of phrasings are one need.

Measured with ``build_scripts/prepare/calibrate_gap_grouping.py`` on the labelled
phrasings in ``queries/gap-grouping/phrasings.json`` (shipped int8 MiniLM),
sweeping 0.200-0.600 in steps of 0.025 and scoring pairs of phrasings:

- tune pool (21 needs, 67 phrasings, plus 21 look-alike phrasings that must
  stay alone): best F1 0.701 at 0.325 (precision 0.671, recall 0.733);
  0.300 gives F1 0.691, 0.350 gives 0.648;
- holdout pool (10 other needs, 30 phrasings) at 0.325: F1 0.929
  (precision 1.000, recall 0.867).

The misses are look-alikes sharing words ("run tests in parallel" and "run
several agents in parallel"): expect a few wrong merges among such needs
rather than split paraphrases. Average link beat single link while exploring
(pair F1 0.92 against 0.74 on the tune needs without look-alikes).
"""
NEAR_CONFIDENCE = 0.2
"""A miss whose nearest capability is at least this likely right is "near" it, not uncataloged.

Such a miss is more often a capability the catalog has, asked in words the
matcher did not trust ("run tasks in the background": Scheduled Tasks 0.39,
Cloud Agents 0.26), than a new need; calling it uncataloged invites a
duplicate capability. Measured with ``build_scripts/measure/gap_near_threshold.py``
on the selection and calibration sets (2026-11-28): of the misses on questions
that have an answer, 64% (77 of 121) have a nearest candidate at 0.2 or more;
of the misses on questions that should match nothing, 5.9% (71 of 1,202) do.
At 0.15 the shares are 74% and 9.1%, at 0.3 49% and 2.3%.
"""
REQUEST_WEIGHT = 3  # an explicit request says more than a lookup that happened to miss
MISS_WEIGHT = 1
MAX_ROWS_READ = 5000  # per table: a report on a full log stays around a second
MAX_GROUPED = 200  # distinct phrasings embedded (about 1 ms each); rarer ones stay single gaps
VOTERS = 3  # phrasings per shown gap matched against the catalog to classify it
_MEMO_SIZE = 5000
_memo_lock = threading.Lock()
_memo: dict[str, np.ndarray] = {}  # phrasing -> vector, so a server's repeated reports embed only new text


def _embed(texts: list[str], encoder: Encoder | None) -> np.ndarray:
    """Vectors for ``texts``; with the default encoder, remembered across calls (bounded)."""
    if encoder is not None:
        return encoder.encode(texts)
    with _memo_lock:
        todo = [t for t in dict.fromkeys(texts) if t not in _memo]
        if todo:
            if len(_memo) + len(todo) > _MEMO_SIZE:
                _memo.clear()
            _memo.update(zip(todo, default_encoder().encode(todo), strict=True))
        return np.vstack([_memo[t] for t in texts])


def group_phrasings(
    texts: list[str], *, encoder: Encoder | None = None, threshold: float = GROUP_THRESHOLD
) -> list[list[int]]:
    """Cluster phrasings of the same need: average-link agglomeration on MiniLM cosine.

    Returns lists of positions into ``texts``, each sorted. Average link
    (mean similarity between two groups) resists the chaining single link
    shows on short phrasings. O(n²) memory and O(n) numpy work per merge
    after an O(n²) argmax; callers keep n to a few hundred.
    """
    if len(texts) < 2:
        return [[i] for i in range(len(texts))]
    vectors = _embed(texts, encoder)
    sims = (vectors @ vectors.T).astype(np.float64)
    np.fill_diagonal(sims, -np.inf)
    sizes = np.ones(len(texts))
    members = {i: [i] for i in range(len(texts))}
    while len(members) > 1:
        a, b = sorted(np.unravel_index(np.argmax(sims), sims.shape))
        if sims[a, b] < threshold:
            break
        # Lance-Williams: the merged group's mean similarity to every other group.
        merged = (sizes[a] * sims[a] + sizes[b] * sims[b]) / (sizes[a] + sizes[b])
        sims[a], sims[:, a] = merged, merged
        sims[a, a] = -np.inf
        sims[b], sims[:, b] = -np.inf, -np.inf
        sizes[a] += sizes[b]
        members[a] += members.pop(b)
    return [sorted(group) for group in members.values()]


@dataclass
class _Phrasing:
    """One normalized phrasing and what the log says about it."""

    text: str
    requests: int = 0
    misses: int = 0
    agents: set[str] = field(default_factory=set)
    first: float = float("inf")
    last: float = float("-inf")

    @property
    def score(self) -> int:
        return REQUEST_WEIGHT * self.requests + MISS_WEIGHT * self.misses

    def add(self, row: dict, kind: str) -> None:
        if kind == "requests":
            self.requests += row["count"]
        else:
            self.misses += row["count"]
        if row["agent"]:
            self.agents.add(row["agent"])
        if row["last_seen"] >= self.last:  # show the newest spelling of the phrasing
            self.text = row["capability"] if kind == "requests" else row["query"]
        self.first = min(self.first, row["first_seen"])
        self.last = max(self.last, row["last_seen"])


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _classify_gap(group: list[_Phrasing], asked: list[str]) -> tuple[dict, dict]:
    """Nearest catalog capability of a gap and its kind, by a weighted vote of its top phrasings.

    Each of the first ``VOTERS`` phrasings is matched against today's catalog
    and votes, with its score, for what it matched (or for "nothing").
    """
    votes: Counter = Counter()
    best: dict[str | None, tuple[str, float]] = {}
    for phrasing in group[:VOTERS]:
        try:
            result = match(phrasing.text, k=1)
        except EngineError:
            continue
        key = None if is_miss(result) else result.name
        votes[key] += phrasing.score
        top = result.candidates[0] if result.candidates else None
        if top and (key not in best or top.confidence > best[key][1]):
            best[key] = (top.name, top.confidence)
    winner = max(votes, key=lambda k: (votes[k], k is None)) if votes else None
    near = best.get(winner)
    nearest = {"name": near[0], "matchConfidence": near[1]} if near else {}
    if winner is None and near and near[1] >= NEAR_CONFIDENCE:
        return nearest, {
            "kind": "near_capability",
            "capability": near[0],
            "label": f"near {near[0]}: check the wording before adding a capability",
        }
    if winner is None:
        return nearest, {"kind": "uncataloged", "label": "uncataloged"}
    catalog = get_catalog()
    have = agents_with(winner)
    lacking = [a for a in asked if a in catalog.agents and a not in have]
    if lacking or not have:
        owners = f" (has it: {', '.join(have)})" if have else " (no agent has it)"
        return nearest, {
            "kind": "agent_lacks",
            "capability": winner,
            "lackedBy": lacking or [a for a in catalog.agent_ids if a not in have],
            "availableIn": have,
            "label": f"agent lacks {winner}{owners}",
        }
    return nearest, {"kind": "cataloged", "capability": winner, "label": f"cataloged: {winner}"}


def _check_filters(since_days: object, top: object) -> None:
    if since_days is not None and (
        isinstance(since_days, bool) or not isinstance(since_days, (int, float)) or since_days <= 0
    ):
        raise InvalidQueryError(f"since_days must be a positive number of days, got {since_days!r}")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise InvalidQueryError(f"top must be a positive integer, got {top!r}")


def gap_report(
    gap_log: GapLog,
    *,
    since_days: float | None = None,
    agent: str | None = None,
    top: int = 20,
    encoder: Encoder | None = None,
) -> dict:
    """Ranked gaps from the log; a request weighs ``REQUEST_WEIGHT``, a miss ``MISS_WEIGHT``.

    Reads at most the newest ``MAX_ROWS_READ`` rows per table and embeds at
    most ``MAX_GROUPED`` phrasings, so a full log still reports in about a
    second. ``agent`` takes an id or name. Raises ``GapLogError`` when the
    database exists but cannot be read; a missing database is an empty report.
    """
    _check_filters(since_days, top)
    agent_id = None
    if agent is not None:
        text = validate_query(agent, field="agent")
        agent_id = get_catalog().resolve_agent(text) or text
    now = gap_log.clock()
    since = now - since_days * 86400 if since_days is not None else None
    requests, misses = gap_log.read(since=since, agent=agent_id, limit=MAX_ROWS_READ)

    phrasings: dict[str, _Phrasing] = {}
    for kind, rows in (("requests", requests), ("misses", misses)):
        for row in rows:
            phrasings.setdefault(row["norm"], _Phrasing(text=row["norm"])).add(row, kind)
    ranked = sorted(phrasings.values(), key=lambda p: (-p.score, -p.last))
    head, tail = ranked[:MAX_GROUPED], ranked[MAX_GROUPED:]
    method = "embedding"
    try:
        groups = [[head[i] for i in g] for g in group_phrasings([p.text for p in head], encoder=encoder)]
    except EncoderUnavailableError as exc:
        log.warning("the gap report groups identical phrasings only: %s", exc)
        groups, method = [[p] for p in head], "exact text"
    groups += [[p] for p in tail]

    gaps = []
    for group in groups:
        group.sort(key=lambda p: (-p.score, -p.last))
        gaps.append(
            {
                "group": group,
                "score": sum(p.score for p in group),
                "requests": sum(p.requests for p in group),
                "last": max(p.last for p in group),
            }
        )
    gaps.sort(key=lambda g: (-g["score"], -g["requests"], -g["last"]))
    shown = [_describe(rank, g["group"]) for rank, g in enumerate(gaps[:top], 1)]
    return {
        "database": gap_log.location,
        "generatedAt": _iso(now),
        "filters": {"sinceDays": since_days, "agent": agent_id},
        "totals": {
            "requests": sum(p.requests for p in phrasings.values()),
            "misses": sum(p.misses for p in phrasings.values()),
            "gaps": len(gaps),
        },
        "rowsRead": {"requests": len(requests), "misses": len(misses), "limitPerTable": MAX_ROWS_READ},
        "truncated": len(requests) >= MAX_ROWS_READ or len(misses) >= MAX_ROWS_READ,
        "weights": {"request": REQUEST_WEIGHT, "miss": MISS_WEIGHT},
        "grouping": {"method": method, "threshold": GROUP_THRESHOLD if method == "embedding" else None},
        "gaps": shown,
        "more": len(gaps) - len(shown),
    }


def _describe(rank: int, group: list[_Phrasing]) -> dict:
    """One gap as JSON: its phrasings (best first), counts, agents, dates and classification."""
    agents = sorted(set().union(*(p.agents for p in group)))
    nearest, classification = _classify_gap(group, agents)
    return {
        "rank": rank,
        "representative": group[0].text,
        "examples": [p.text for p in group[1:4]],
        "phrasings": len(group),
        "score": sum(p.score for p in group),
        "requests": sum(p.requests for p in group),
        "misses": sum(p.misses for p in group),
        "agents": agents,
        "firstSeen": _iso(min(p.first for p in group)),
        "lastSeen": _iso(max(p.last for p in group)),
        "nearest": nearest,
        "classification": classification,
    }


def _cell(text: str, width: int) -> str:
    text = " ".join(strip_controls(str(text)).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def format_report(report: dict) -> str:
    """The report as a plain-text table for a maintainer's terminal."""
    totals = report["totals"]
    scope = []
    if report["filters"].get("sinceDays") is not None:
        scope.append(f"last {report['filters']['sinceDays']:g} days")
    if report["filters"].get("agent"):
        scope.append(f"agent {report['filters']['agent']}")
    lines = [
        f"Capability gaps ({', '.join(scope) or 'all time'}): {totals['requests']} requests, "
        f"{totals['misses']} silent misses, {totals['gaps']} gaps",
        f"Database: {report['database']}",
    ]
    if not report["gaps"]:
        lines.append("Nothing recorded yet.")
        return "\n".join(lines)
    weights = report["weights"]
    lines.append(
        f"Score = {weights['request']} x requests + {weights['miss']} x misses. "
        f"Phrasings grouped by {report['grouping']['method']}."
    )
    if report["truncated"]:
        lines.append(f"Only the newest {report['rowsRead']['limitPerTable']} rows per table were read.")
    lines.append("")
    header = (
        f"{'#':>3}  {'score':>5}  {'req':>4}  {'miss':>4}  {'need':<36}  {'nearest in catalog':<28}  kind"
    )
    lines += [header, "-" * len(header)]
    for gap in report["gaps"]:
        near = gap["nearest"]
        near_text = f"{near['name']} ({near['matchConfidence']:.2f})" if near else "-"
        lines.append(
            f"{gap['rank']:>3}  {gap['score']:>5}  {gap['requests']:>4}  {gap['misses']:>4}  "
            f"{_cell(gap['representative'], 36):<36}  {_cell(near_text, 28):<28}  "
            f"{_cell(gap['classification']['label'], 70)}"
        )
        if gap["examples"]:
            more = gap["phrasings"] - 1 - len(gap["examples"])
            examples = "; ".join(f'"{_cell(e, 40)}"' for e in gap["examples"])
            lines.append(f"{'':>25}also: {examples}" + (f" (+{more} more)" if more > 0 else ""))
        agents = ", ".join(gap["agents"]) or "no agent named"
        lines.append(f"{'':>25}agents: {agents}; seen {gap['firstSeen'][:10]} .. {gap['lastSeen'][:10]}")
    if report["more"]:
        lines.append(f"... and {report['more']} smaller gaps (use --json or a higher limit to see them)")
    return "\n".join(lines)
