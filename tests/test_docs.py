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
