"""jobq: a tiny in-process job queue with priorities and dependencies."""

from .queue import Job, JobQueue
from .runner import CycleError, plan, run

__all__ = ["CycleError", "Job", "JobQueue", "plan", "run"]
