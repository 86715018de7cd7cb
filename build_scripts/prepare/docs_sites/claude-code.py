"""Claude Code docs (https://code.claude.com/docs/en/<page>), read from the ericbuess/claude-code-docs mirror.

The mirror's fetcher (scripts/fetch_claude_docs.py) downloads every English page
listed in the site's sitemap as ``<page>.md`` and saves it as
``docs/<page>.md``, turning the slashes of sub-paths into ``__``
(``agent-sdk/hooks`` -> ``docs/agent-sdk__hooks.md``). ``docs/docs_manifest.json``
records the URL each file came from (``original_url``), so that is the mapping
used here, restricted to files present in the tree. ``changelog.md`` is a copy
of the GitHub CHANGELOG.md, not a docs page, and its manifest URL lies outside
the site, so it drops out. Pages the fetcher skips by design (paths containing
/api/, /reference/, /examples/ ...) are not listed, so they cannot be cited.
"""

import json

SITE = "https://code.claude.com/docs"
REPO = "ericbuess/claude-code-docs"


def pages(list_files, read):
    present = {p[len("docs/") :] for p in list_files() if p.startswith("docs/") and p.endswith(".md")}
    manifest = json.loads(read("docs/docs_manifest.json"))["files"]
    return [
        entry["original_url"]
        for name, entry in manifest.items()
        if name in present and entry.get("original_url", "").startswith(SITE + "/en/")
    ]
