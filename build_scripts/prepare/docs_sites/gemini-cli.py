"""geminicli.com/docs pages from the google-gemini/gemini-cli repository.

The site is built (outside the repository) from the Markdown files in
``docs/``; ``docs/sidebar.json`` is its table of contents, with slugs such as
``docs/cli/plan-mode``. So every ``docs/**/*.md`` or ``*.mdx`` file is a page:
the URL is the path without its extension, ``index`` files serve their folder
(``docs/extensions/index.md`` -> ``/docs/extensions``) and slugs are lower case
(``docs/CONTRIBUTING.md`` -> ``/docs/contributing``). Pages linked from the
repository but absent from the sidebar (``docs/tools/*.md``) are still served.
Sidebar slugs are added too, so a page the TOC names is never missed.
``docs/redirects.json`` lists moved pages; its sources are not pages.
"""

from __future__ import annotations

import json

SITE = "https://geminicli.com/docs"
REPO = "google-gemini/gemini-cli"


def _slug(path: str) -> str:
    stem = path.rsplit(".", 1)[0].lower()
    if stem == "docs/index" or stem.endswith("/index"):
        stem = stem.rsplit("/", 1)[0]
    return stem


def _sidebar_slugs(items: list) -> list[str]:
    out = []
    for item in items:
        if item.get("slug"):
            out.append(item["slug"].strip("/").lower())
        out += _sidebar_slugs(item.get("items", []))
    return out


def pages(list_files, read) -> list[str]:
    slugs = {_slug(p) for p in list_files() if p.startswith("docs/") and p.endswith((".md", ".mdx"))}
    slugs |= set(_sidebar_slugs(json.loads(read("docs/sidebar.json"))))
    redirected = {src.strip("/").lower() for src in json.loads(read("docs/redirects.json"))}
    base = SITE.rsplit("/docs", 1)[0]
    return sorted(f"{base}/{s}" for s in slugs - redirected)
