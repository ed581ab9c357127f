from mdtoc import build_toc, insert_toc, iter_headings, slugify


def test_basic_toc():
    doc = "# Guide\n\nintro\n\n## Install\n\n## Usage\n"
    assert build_toc(doc) == "- [Guide](#guide)\n  - [Install](#install)\n  - [Usage](#usage)\n"


def test_nested_levels_and_depth():
    doc = "## A\n### A.1\n#### deep\n## B\n"
    assert build_toc(doc, max_level=3) == "- [A](#a)\n  - [A.1](#a1)\n- [B](#b)\n"


def test_slug_punctuation_and_code():
    assert slugify("What's `new` in v2.0?") == "whats-new-in-v20"
    assert slugify("[Link](http://x) here") == "link-here"


def test_duplicate_headings_get_suffix():
    doc = "# Setup\n## Options\n# Usage\n## Options\n"
    assert build_toc(doc) == (
        "- [Setup](#setup)\n  - [Options](#options)\n- [Usage](#usage)\n  - [Options](#options-1)\n"
    )


def test_many_duplicates():
    doc = "## Example\n## Example\n## Example\n"
    anchors = [line.split("(#")[1].rstrip(")") for line in build_toc(doc).splitlines()]
    assert anchors == ["example", "example-1", "example-2"]


def test_tilde_fence_skipped():
    doc = "# Real\n\n~~~python\n# comment, not a heading\n~~~\n\n## After\n"
    assert [h.text for h in iter_headings(doc)] == ["Real", "After"]


def test_backtick_fence_skipped():
    doc = "# One\n````md\n```\n# inner\n```\n````\n# Two\n"
    assert [h.text for h in iter_headings(doc)] == ["One", "Two"]


def test_insert_toc_between_markers():
    doc = "# Doc\n<!-- toc -->\nold\n<!-- tocstop -->\n## Part\n"
    assert insert_toc(doc) == "# Doc\n<!-- toc -->\n- [Doc](#doc)\n  - [Part](#part)\n<!-- tocstop -->\n## Part\n"
