"""The docs say what the code and the data do: examples run as shown, and lists follow the catalog."""

from __future__ import annotations

import doctest
import re

import engine
from tests.conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FIGURES = re.compile(r"<!-- figures:(\S+) -->.*?<!-- /figures:\1 -->", re.DOTALL)


def code_blocks(text: str, language: str | None = None) -> list[str]:
    """The fenced code blocks of a Markdown text, optionally of one language only."""
    return [
        body
        for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
        if language is None or lang == language
    ]


def prose_paragraphs(text: str) -> list[str]:
    """Paragraphs outside code blocks and the generated figure blocks."""
    text = FIGURES.sub("", re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE))
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_the_readme_library_example_prints_what_it_shows():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [example] = [block for block in code_blocks(readme, "python") if ">>>" in block]
    test = doctest.DocTestParser().get_doctest(example, {}, "README library example", "README.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_a_list_of_agent_ids_in_the_docs_names_every_agent_or_points_to_the_catalog():
    """Three or more ids in one paragraph make a list, and a list that misses an agent is stale."""
    ids = engine.get_catalog().agent_ids
    for path in DOCS:
        for paragraph in prose_paragraphs(path.read_text(encoding="utf-8")):
            named = [i for i in ids if f"`{i}`" in paragraph]
            assert len(named) < 3 or named == ids, f"{path.name}: {paragraph[:200]}"


PYPI_INSTALL = re.compile(
    r"pip install '?agent-capabilities|uvx agent-capabilities|\"agent-capabilities\", \"mcp\""
    r"|%22agent-capabilities%22%2C%22mcp%22"
)


def test_an_install_from_pypi_is_shown_as_what_works_once_the_package_is_published():
    """The package is not on PyPI yet: its PyPI forms may appear only beside words saying so."""
    for path in DOCS:
        text = re.sub(
            r"pip install '[^']* @ git\+[^']*'", "", path.read_text(encoding="utf-8")
        )  # git URLs work now
        chunks = re.split(r"\n\s*\n", text)
        for before, chunk in zip(["", *chunks], chunks, strict=False):
            if PYPI_INSTALL.search(chunk):
                near = (before + chunk).lower()
                assert "once" in near and ("publish" in near or "pypi" in near), f"{path.name}: {chunk[:300]}"
