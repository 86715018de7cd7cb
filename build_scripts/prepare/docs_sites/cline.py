"""docs.cline.bot pages from the cline/cline repository.

The site is a Mintlify project kept in ``docs/`` of cline/cline; ``docs/docs.json``
is its configuration (``navigation.tabs[].groups[].pages`` holds the sidebar, with
nested groups) and ``redirects`` lists moved pages. Mintlify publishes every
``.mdx``/``.md`` file under ``docs/`` at its path without the extension, relative to
``docs/`` and at the site root (``docs/customization/hooks.mdx`` ->
``https://docs.cline.bot/customization/hooks``), including files left out of the
sidebar (``features/auto-compact``, ``core-workflows/task-management``). There are
no ``index`` files. Sidebar slugs are added so a page the navigation names is never
missed. Redirect sources are old URLs, not pages, and are dropped, except where the
navigation still lists the same slug (``sdk/examples`` is both a sidebar page with
its own file and a redirect source; the sidebar entry is kept).
"""

from __future__ import annotations

import json

SITE = "https://docs.cline.bot"
REPO = "cline/cline"


def _slug(path: str) -> str:
    stem = path[len("docs/") :].rsplit(".", 1)[0]
    if stem == "index" or stem.endswith("/index"):
        stem = stem.rsplit("/", 1)[0] if "/" in stem else ""
    return stem


def _nav_slugs(node) -> list[str]:
    out: list[str] = []
    if isinstance(node, str):
        out.append(node.strip("/"))
    elif isinstance(node, list):
        for item in node:
            out += _nav_slugs(item)
    elif isinstance(node, dict):
        for key in ("tabs", "groups", "pages", "anchors", "dropdowns", "versions", "languages"):
            if key in node:
                out += _nav_slugs(node[key])
    return out


def pages(list_files, read) -> list[str]:
    config = json.loads(read("docs/docs.json"))
    files = {_slug(p) for p in list_files() if p.startswith("docs/") and p.endswith((".mdx", ".md"))}
    nav = set(_nav_slugs(config.get("navigation", {})))
    redirected = {r["source"].strip("/") for r in config.get("redirects", [])}
    slugs = (files | nav) - (redirected - nav)
    return sorted(f"{SITE}/{s}" if s else SITE for s in slugs)
