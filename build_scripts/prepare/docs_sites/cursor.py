"""Cursor docs (https://cursor.com/docs/<page>), read from the mehmetbaykar/cursor-docs-skill mirror.

The mirror's fetcher (``scripts/fetch_cursor_docs.py``, fetch tool version 2.0)
discovers pages from cursor.com's sitemaps and ``llms.txt``, downloads the
Markdown that cursor.com serves for each docs path (``Accept: text/markdown``),
strips the site-wide sitemap footer and ``[Media]`` markers, makes root-relative
links absolute, prepends a ``title``/``source``/``path`` frontmatter and saves
the page as ``skills/cursor-docs/references/<path with / -> __>.md``
(``/docs`` itself becomes ``cursor.md``). ``docs_manifest.json`` in the same
folder maps every saved file to its ``original_url``, so that mapping is used
here, restricted to files present in the tree. ``INDEX.md`` and the manifest
are not pages. By design the fetcher skips ``/docs/enterprise``,
``/docs/enterprise/*`` and ``/docs/account/enterprise/*``, and paths whose
response is not Markdown (listed under ``skipped``), so those pages are absent
and cannot be cited from this snapshot. Help-center pages (cursor.com/help/...)
are outside the docs site and not mirrored.
"""

import json

SITE = "https://cursor.com/docs"
REPO = "mehmetbaykar/cursor-docs-skill"
_DIR = "skills/cursor-docs/references/"


def pages(list_files, read):
    present = {p[len(_DIR) :] for p in list_files() if p.startswith(_DIR) and p.endswith(".md")}
    manifest = json.loads(read(_DIR + "docs_manifest.json"))["files"]
    urls = {
        entry["original_url"].rstrip("/")
        for name, entry in manifest.items()
        if name in present and entry.get("original_url", "").startswith(SITE)
    }
    return sorted(urls)
