from mdtoc import build_toc, slugify


def test_slugify():
    assert slugify("Hello, World!") == "hello-world"


def test_toc():
    doc = "# Title\n\n## Part one\n\ntext\n\n## Part two\n"
    assert build_toc(doc) == "- [Title](#title)\n  - [Part one](#part-one)\n  - [Part two](#part-two)\n"


def test_backtick_fence_ignored():
    doc = "# Real\n\n```\n# not a heading\n```\n"
    assert build_toc(doc) == "- [Real](#real)\n"
