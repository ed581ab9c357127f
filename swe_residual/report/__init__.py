"""What people read: the summary's tables (declared once in tables/, each figure's meaning
once in meanings.py) drawn for the terminal, summary.md and report.html, with its figures
and item pages."""
