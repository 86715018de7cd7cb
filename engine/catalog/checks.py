"""Catalog truth checks that the schema cannot express: URLs, freshness, status consistency, gotcha tokens.

Used by the tests (so a moved page or a stale maturity fails CI) and by
``build_scripts/prepare/check_catalog.py`` (a report for maintainers). Every function
takes plain parsed JSON and returns a list of problems as sentences.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from ..matching.identifiers import identifiers_in
from .model import DATA_DIR

STALE_DAYS = 90
# Query parameters that only say where a link was copied from.
TRACKING_PARAMS = ("ref", "m", "fbclid", "gclid")


def load_docs_indexes(data_dir: Path = DATA_DIR) -> dict[str, dict]:
    """``engine/data/docs/<agent-id>.json`` by agent id (empty when there are none)."""
    folder = Path(data_dir) / "docs"
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))}


def normalize_url(url: str) -> str:
    """The page a URL points at: no fragment, no query, no trailing slash."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")


def tracking_params(url: str) -> list[str]:
    """Names of tracking query parameters in ``url`` ('ref', 'm', 'utm_source', ...)."""
    names = [name for name, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)]
    return [n for n in names if n in TRACKING_PARAMS or n.startswith("utm_")]


def record_urls(agent: dict) -> list[tuple[str, str]]:
    """(where, url) for the agent's docsUrl, every startUrl and every source URL."""
    urls = [("docsUrl", agent["docsUrl"])]
    for rec in agent["capabilities"]:
        start = rec.get("implementationNotes", {}).get("startUrl")
        if start:
            urls.append((f"{rec['name']}: startUrl", start))
        urls.extend((f"{rec['name']}: source", src["url"]) for src in rec.get("sources", []))
    return urls


def url_problems(agent: dict, indexes: dict[str, dict]) -> list[str]:
    """URLs on an official docs site that are not pages of it, and URLs with tracking strings.

    A URL is checked against every index whose site it starts with, so a VS Code
    record citing a GitHub Docs page is held to the GitHub Docs index too.
    """
    pages = {site["site"]: {normalize_url(p) for p in site["pages"]} for site in indexes.values()}
    problems = []
    for where, url in record_urls(agent):
        params = tracking_params(url)
        if params:
            problems.append(f"{agent['id']} {where}: {url} carries tracking parameter(s) {', '.join(params)}")
        for site, known in pages.items():
            if normalize_url(url).startswith(normalize_url(site)) and normalize_url(url) not in known:
                problems.append(f"{agent['id']} {where}: {url} is not a page of {site} at the snapshot")
    return problems


def ga_date(agent: dict) -> str | None:
    """The date the product became generally available, from its status facts."""
    for fact in agent.get("statusFacts", []):
        if fact["kind"] == "general-availability":
            return fact["date"]
    return None


def maturity_problems(agent: dict) -> list[str]:
    """Pre-release maturity on a GA product without a note saying the docs mark that feature so."""
    if ga_date(agent) is None:
        return []
    return [
        f"{agent['id']} {rec['name']}: maturityLevel '{rec['maturityLevel']}' although the product is "
        f"generally available since {ga_date(agent)}; add a maturityNote citing the docs' preview label "
        "or correct it"
        for rec in agent["capabilities"]
        if rec["available"]
        and rec["maturityLevel"] in ("beta", "experimental")
        and not rec.get("maturityNote")
    ]


def source_problems(agent: dict) -> list[str]:
    """Available records with no source at all."""
    return [
        f"{agent['id']} {rec['name']}: no sources"
        for rec in agent["capabilities"]
        if rec["available"] and not rec.get("sources")
    ]


def stale_sources(agent: dict, today: dt.date, days: int = STALE_DAYS) -> list[str]:
    """Sources whose last check is older than ``days``: each one must be re-read or dropped."""
    problems = []
    for rec in agent["capabilities"]:
        for src in rec.get("sources", []):
            if (today - dt.date.fromisoformat(src["verifiedDate"])).days > days:
                problems.append(
                    f"{agent['id']} {rec['name']}: {src['url']} last verified {src['verifiedDate']}"
                )
    return problems


def alias_conflicts(aliases: dict[str, str], agents: list[dict]) -> list[str]:
    """Aliases that send an agent's own name for a feature to a different capability.

    When a record says an agent calls its capability X by some term, an alias
    that maps that same term elsewhere answers the user confidently and
    wrongly (the catalog contradicting itself), so the alias must go or move.
    """
    by_term = {alias.strip().lower(): (alias, name) for alias, name in aliases.items()}
    problems = []
    for agent in agents:
        for rec in agent["capabilities"]:
            term = (rec.get("terminology") or "").strip().lower()
            if rec.get("available") and term in by_term and by_term[term][1] != rec["name"]:
                alias, name = by_term[term]
                problems.append(
                    f"alias '{alias}' -> {name}, but {agent['id']} calls its {rec['name']} "
                    f"'{rec['terminology']}'; remove the alias or point it at {rec['name']}"
                )
    return problems


def _found(token: str, text: str) -> bool:
    """Whether ``token`` (lower case) is in ``text`` (lower case, quotes and backticks dropped).

    Quotes go because a gotcha writes ``trust: true`` where a JSON example has
    ``"trust": true``. A bare ``a/b`` of words is prose for "a or b" as often as a
    path, and a dotted settings key ``general.sessionRetention`` is usually shown
    as nested JSON or TOML, so each also counts when every part is in the text.
    """
    if token in text:
        return True
    if token[0].isalpha() and " " not in token and ("/" in token) != ("." in token):
        parts = re.split(r"[/.]", token)
        return len(parts) > 1 and all(
            p and re.search(rf"(?<![\w-]){re.escape(p)}(?![\w-])", text) for p in parts
        )
    return False


def gotcha_tokens(agent: dict, text_of: Callable[[dict], str | None]) -> tuple[list[str], list[str]]:
    """Gotchas whose identifiers appear in none of their record's cited sources: (problems, unchecked).

    A gotcha's key token is a flag, path, settings key or command it names
    (``identifiers_in``, the matcher's own notion of an identifier); it holds when
    any of them is in the text of any source its record cites. ``text_of(source)``
    gives a source's text as it was read, or None when no local copy has it; a
    gotcha that fails only because some of its sources could not be read is
    unchecked, not a problem. Gotchas that name no identifier are not checked.
    """
    problems: list[str] = []
    unchecked: list[str] = []
    for record in agent.get("capabilities", []):
        gotchas = (record.get("implementationNotes") or {}).get("gotchas") or []
        if not gotchas:
            continue
        texts = [text_of(source) for source in record.get("sources", [])]
        readable = [" ".join(t.replace('"', "").replace("`", "").lower().split()) for t in texts if t]
        for gotcha in gotchas:
            # A one-character span such as `@` would pair the wrong backticks after it.
            plain = re.sub(r"`([^`\n])`", r"\1", gotcha)
            tokens = [" ".join(t.replace('"', "").split()) for t in identifiers_in(plain)]
            if not tokens or any(_found(t, text) for t in tokens for text in readable):
                continue
            where = f"{agent['id']} {record['name']}: {', '.join(f'`{t}`' for t in tokens[:3])}"
            if None in texts:
                unchecked.append(f"{where} ({texts.count(None)} of {len(texts)} sources not available)")
            else:
                problems.append(f"{where} in none of its {len(texts)} cited sources: {gotcha[:90]}")
    return problems, unchecked
