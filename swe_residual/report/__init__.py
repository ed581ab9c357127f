"""report.html: the summary's tables and figures, the item matrix and the item pages."""
