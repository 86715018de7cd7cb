"""OpenAI Codex docs (https://developers.openai.com/codex/<page>), read from a verbatim mirror.

OpenAI no longer keeps the Codex docs in the openai/codex repository (PR #8662 and
#20896 moved them to the site). The mirror's fetcher (scripts/fetch_openai_docs.py)
reads the site's ``https://developers.openai.com/codex/llms.txt`` index, downloads
every linked ``<page>.md`` under ``https://developers.openai.com/codex/`` and saves
it as ``docs/codex/<page>.md``; ``docs/docs_manifest.json`` records, per file, the
URL it came from (``url``), its sha256 and ``fetched_at``. So the manifest is the
mapping used here, restricted to files present in the tree and to the ``codex``
source (the mirror also holds ``api-docs``). The page URL is the manifest URL
without its ``.md`` suffix. The site root (``/codex``) is not in llms.txt; its
content is the ``overview`` page. Pages the site serves but llms.txt does not link
(for example the changelog) are not listed, so they cannot be cited.
"""

import json

SITE = "https://developers.openai.com/codex"
REPO = "life-is-blue/openai-codex-docs-mirror"


def pages(list_files, read):
    present = {p for p in list_files() if p.startswith("docs/codex/") and p.endswith(".md")}
    manifest = json.loads(read("docs/docs_manifest.json"))["files"]
    out = set()
    for name, entry in manifest.items():
        url = entry.get("url", "")
        if entry.get("source") != "codex" or f"docs/{name}" not in present:
            continue
        if url.startswith(SITE + "/") and url.endswith(".md"):
            out.add(url[: -len(".md")])
    return sorted(out)
