"""code.visualstudio.com/docs pages from microsoft/vscode-docs, read through its tables of contents.

The repository (about 1 GB) cannot be cloned here, so the source folder holds
only what was read file by file: ``docs/toc.json`` (the site's global TOC) and
the ``toc.json`` files it references through ``"toc"`` keys (relative to
``docs/``). Every URL in a TOC (``topics`` entries, nested groups and ``link``
keys) is a page. The site also serves Markdown pages that no TOC lists, such as
feature-gated pages; those that were read at their current path are saved as
placeholder ``docs/**/*.md`` files and count as pages too
(``docs/agents/run/automations.md`` -> ``/docs/agents/run/automations``).
Old ``/docs/copilot/...`` paths survive only as site redirects, so they are
not pages.
"""

from __future__ import annotations

import json
import re

SITE = "https://code.visualstudio.com"
REPO = "microsoft/vscode-docs"
BASE = SITE.rsplit("/docs", 1)[0]


def _load(read, path: str) -> list:
    # The TOC files carry trailing commas, which json rejects.
    return json.loads(re.sub(r",(\s*[\]}])", r"\1", read(path)))


def _urls(node, read) -> list[str]:
    out: list[str] = []
    if isinstance(node, list):
        for item in node:
            if isinstance(item, str) and item.startswith("/docs/"):
                out.append(item)
            elif isinstance(item, (list, dict)):
                out += _urls(item, read)
    elif isinstance(node, dict):
        if node.get("link"):
            out.append(node["link"])
        if node.get("toc"):
            out += _urls(_load(read, "docs/" + node["toc"]), read)
        out += _urls(node.get("topics", []), read)
    return out


def pages(list_files, read) -> list[str]:
    urls = set(_urls(_load(read, "docs/toc.json"), read))
    urls |= {"/" + p[: -len(".md")] for p in list_files() if p.startswith("docs/") and p.endswith(".md")}
    # Release notes are pages too (release-notes/v1_109.md -> /updates/v1_109), checked like any other.
    urls |= {
        "/updates/" + p[len("release-notes/") : -len(".md")]
        for p in list_files()
        if p.startswith("release-notes/v") and p.endswith(".md")
    }
    return sorted(BASE + u.split("#")[0].rstrip("/") for u in urls)
