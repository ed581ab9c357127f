"""mdtoc: generate a table of contents for Markdown documents."""

from .headings import Heading, iter_headings
from .slug import slugify
from .toc import build_toc, insert_toc

__all__ = ["Heading", "build_toc", "insert_toc", "iter_headings", "slugify"]
