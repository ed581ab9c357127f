"""Run the jobs of a queue, respecting dependencies and priorities."""


class CycleError(Exception):
    """The dependencies of the remaining jobs form a cycle."""


def plan(queue):
    """Return job names in execution order.

    A job becomes ready when all its dependencies are done; among ready jobs
    the queue's ordering rules apply.
    """
    jobs = {job.name: job for job in queue.jobs()}
    for job in jobs.values():
        for dep in job.deps:
            if dep not in jobs:
                raise KeyError(f"job {job.name!r} depends on unknown job {dep!r}")
    done = set()
    order = []
    pending = dict(jobs)
    while pending:
        ready = [job for job in pending.values() if all(dep in done for dep in job.deps)]
        if not ready:
            raise CycleError("dependency cycle among: " + ", ".join(sorted(pending)))
        ready.sort(key=lambda job: job.priority)
        job = ready[0]
        order.append(job.name)
        done.add(job.name)
        del pending[job.name]
    return order


def run(queue):
    """Run every job once; return ``{name: "ok" | "failed" | "skipped"}``.

    A job whose dependency failed or was skipped is skipped.
    """
    results = {}
    for name in plan(queue):
        job = queue.get(name)
        if any(results[dep] != "ok" for dep in job.deps):
            results[name] = "skipped"
            continue
        try:
            if job.action is not None:
                job.action()
        except Exception:
            results[name] = "failed"
        else:
            results[name] = "ok"
    return results
