"""Set the GitHub account that hosts the repository: one setting, written wherever it is named.

    python build_scripts/prepare/set_owner.py NAME      # make NAME the owner everywhere
    python build_scripts/prepare/set_owner.py --check   # list mentions that differ from the setting

The setting is ``Repository`` under ``[project.urls]`` in pyproject.toml (``OWNER`` until the
repository has a home). The same account appears in the other project URLs, in server.json
(``name: io.github.OWNER/...`` and ``repository.url``, which the MCP Registry checks against each
other), in the README's ``mcp-name`` line (which the registry looks for on PyPI), in SECURITY.md,
the CHANGELOG's links and the docs. Writing them all from one command keeps them from drifting;
``tests/test_packaging.py`` fails while any of them differs from the setting.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = ("pyproject.toml", "server.json", "README.md", "SECURITY.md", "CHANGELOG.md", "docs/*.md")
GITHUB_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")


def project(root: Path = ROOT) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def owner(root: Path = ROOT) -> str:
    """The setting: the account in pyproject's ``Repository`` URL."""
    url = project(root)["urls"]["Repository"]
    return re.fullmatch(r"https://github\.com/([^/]+)/[^/]+", url).group(1)


def _mention(root: Path) -> re.Pattern:
    """``github.com/ACCOUNT/<project>`` or ``io.github.ACCOUNT/<project>``, the account captured."""
    return re.compile(rf"(github\.com/|io\.github\.)([A-Za-z0-9-]+)(/{re.escape(project(root)['name'])}\b)")


def files(root: Path = ROOT) -> list[Path]:
    return [path for pattern in FILES for path in sorted(root.glob(pattern))]


def mentions(root: Path = ROOT) -> list[tuple[Path, str]]:
    """Every (file, account) the project's GitHub address or registry name appears with."""
    pattern = _mention(root)
    return [
        (path, m.group(2)) for path in files(root) for m in pattern.finditer(path.read_text(encoding="utf-8"))
    ]


def set_owner(name: str, root: Path = ROOT) -> list[Path]:
    """Write ``name`` as the account in every mention; returns the files that changed."""
    if not GITHUB_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a GitHub account name (letters, digits and hyphens, at most 39)")
    pattern = _mention(root)
    changed = []
    for path in files(root):
        text = path.read_text(encoding="utf-8")
        new = pattern.sub(lambda m: m.group(1) + name + m.group(3), text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", help="the GitHub account (user or organisation)")
    parser.add_argument("--check", action="store_true", help="list mentions that differ from the setting")
    args = parser.parse_args(argv)
    if args.check or args.name is None:
        setting = owner()
        wrong = [(p, o) for p, o in mentions() if o != setting]
        for path, account in wrong:
            print(f"{path.relative_to(ROOT)}: {account} (the setting is {setting})")
        return 1 if wrong else 0
    try:
        changed = set_owner(args.name)
    except ValueError as exc:
        parser.error(str(exc))
    for path in changed:
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
