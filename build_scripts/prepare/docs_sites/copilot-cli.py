"""GitHub Docs Copilot pages (docs.github.com/en/copilot), built from github/docs ``content/copilot``.

GitHub Docs serves one page per Markdown file: ``content/copilot/a/b.md`` is
``/en/copilot/a/b`` and a folder's ``index.md`` is the folder URL. In a checkout
at one commit every file under ``content/copilot`` is a live page (moved pages
are deleted and survive only as ``redirect_from`` entries, which are not pages).
The whole Copilot tree is indexed, not only the CLI pages, because VS Code
records cite GitHub Docs pages too.

github/docs is too large to clone here, so the catalog's index was built from a
folder that recreates the current tree as empty files (see the changes log for
how the tree was reconstructed from the newest ``index.md`` children lists).
"""

SITE = "https://docs.github.com/en/copilot"
REPO = "github/docs"
PREFIX = "content/copilot/"


def pages(list_files, read):
    urls = []
    for path in list_files():
        path = path.replace("\\", "/")
        if path.startswith("tree/"):
            path = path[len("tree/") :]
        if not (path.startswith(PREFIX) and path.endswith(".md")) or path.endswith("README.md"):
            continue
        rel = path[len(PREFIX) : -len(".md")]
        if rel == "index":
            rel = ""
        elif rel.endswith("/index"):
            rel = rel[: -len("/index")]
        urls.append(f"{SITE}/{rel}".rstrip("/"))
    return urls
