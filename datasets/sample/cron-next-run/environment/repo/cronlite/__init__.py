"""Parse cron expressions and compute when they fire next."""

from .parser import CronError, CronExpr, parse, parse_field
from .schedule import iter_runs, next_run

__all__ = ["CronError", "CronExpr", "iter_runs", "next_run", "parse", "parse_field"]
