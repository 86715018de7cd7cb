"""Kiro CLI docs (https://kiro.dev/docs/cli/...), read as stored copies of the vendor's pages.

Kiro CLI is closed source and its docs have no public repository, so the index
is built from a folder of saved page texts (what the search tool's stored
copies returned) plus ``pages.json``, which maps each official URL to the file
holding its text, or to ``null`` for a page only known from the saved pages'
breadcrumbs and links (such as the CLI overview the breadcrumbs name). A URL
whose file is missing from the folder is left out, so the index lists only
pages someone could read or saw linked. The snapshot is the site and the date
the copies were read (the stored copies carry no crawl date):

    python build_scripts/prepare/build_docs_index.py --agent kiro-cli --dir <saved pages> --date 2026-11-28
"""

import json

SITE = "https://kiro.dev"
REPO = None
SNAPSHOT_SITE = "https://kiro.dev/docs/cli"
MANIFEST = "pages.json"


def pages(list_files, read):
    present = set(list_files())
    manifest = json.loads(read(MANIFEST))
    return sorted(url.rstrip("/") for url, file in manifest.items() if file is None or file in present)
