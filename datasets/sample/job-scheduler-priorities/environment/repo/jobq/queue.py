"""Priority queue of named jobs."""

import heapq
from dataclasses import dataclass


@dataclass
class Job:
    name: str
    priority: int = 0
    deps: tuple = ()
    action: object = None  # zero-argument callable, or None for a no-op job


class JobQueue:
    """Jobs with a higher ``priority`` value are taken first.

    Jobs with equal priority are taken in the order in which they were added.
    """

    def __init__(self):
        self._heap = []
        self._jobs = {}

    def add(self, name, priority=0, deps=(), action=None):
        """Register a job; ``deps`` names jobs that must run before it."""
        if name in self._jobs:
            raise ValueError(f"duplicate job {name!r}")
        job = Job(name, priority, tuple(deps), action)
        self._jobs[name] = job
        heapq.heappush(self._heap, (priority, name))
        return job

    def pop(self):
        """Remove and return the next job to run (ignores dependencies)."""
        if not self._heap:
            raise IndexError("pop from an empty JobQueue")
        _, name = heapq.heappop(self._heap)
        return self._jobs[name]

    def get(self, name):
        return self._jobs[name]

    def jobs(self):
        """All registered jobs, in the order they were added."""
        return list(self._jobs.values())

    def __len__(self):
        return len(self._heap)

    def __bool__(self):
        return bool(self._heap)
