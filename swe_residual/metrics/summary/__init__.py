"""Aggregating run records into summary.json and its Markdown and terminal forms."""
