"""Verification on the docker backend, as Harbor runs it (DESIGN §4).

After the agent stops, the task's `[[verifier.collect]]` steps run in the agent's container,
then the top-level `artifacts` are copied out to the host (kept beside the run record). Then:
- `shared` mode: the hidden tests are uploaded into the agent's own container and run there;
- `separate` mode: a FRESH container verifies (swe_residual/verifier_environment.py says which
  image) and receives the artifacts at their own paths, and nothing else of the agent's
  container: no commit of the agent's file system is made.
Stale reward files are removed before test.sh runs; what it leaves in /logs/verifier is read.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from swe_residual.collect import ARTIFACTS_DIR, collected_sources, host_path, prepare_artifacts_dir, run_collect_steps
from swe_residual.environment.base import Environment, StartSpec, VerifierOutput
from swe_residual.environment.docker.archives import rooted_archive
from swe_residual.environment.docker.environment import DockerEnvironment
from swe_residual.environment.docker.exec import to_result
from swe_residual.environment.docker.images import dockerfile_bases
from swe_residual.environment.docker.named_images import ensure_dockerfile_bases, named_image_id
from swe_residual.environment.local import MAX_LOG_FILE_BYTES
from swe_residual.errors import InfraError
from swe_residual.task import Task
from swe_residual.verifier_environment import (
    SHARED,
    TASK_ENVIRONMENT,
    TESTS_DOCKERFILE,
    VerifierEnvironmentPlan,
    plan_verifier_environment,
)

if TYPE_CHECKING:
    from swe_residual.environment.docker.backend import DockerBackend

TESTS_DIR = "/tests"
VERIFIER_LOGS_DIR = "/logs/verifier"
VERIFIER_REPO = "swe-residual-verifier"
# An artifact larger than this is not copied (and is reported missing): artifacts are patches
# and logs, held in memory on their way to the verifier.
MAX_ARTIFACT_FILE_BYTES = 256 * 1024 * 1024

# Every process but the container's init (pid 1), its idle main process (the first child of
# init: the lowest pid whose parent is 1) and this script; three passes catch fresh forks.
KILL_LEFTOVERS = (
    'main=; for d in /proc/[0-9]*; do p=${d#/proc/}; '
    'pp=$(sed -n "s/^PPid:[[:space:]]*//p" "$d/status" 2>/dev/null); '
    'if [ "$pp" = 1 ] && { [ -z "$main" ] || [ "$p" -lt "$main" ]; }; then main=$p; fi; done; '
    'for pass in 1 2 3; do for d in /proc/[0-9]*; do p=${d#/proc/}; '
    'case "$p" in 1|"$$"|"$main") continue;; esac; kill -9 "$p" 2>/dev/null; done; done; exit 0'
)


def run_verifier(backend: DockerBackend, environment: Environment, task: Task,
                 artifacts_dir: Path | None = None) -> VerifierOutput:
    """Collect, copy the artifacts out (into `artifacts_dir` when given and writable), verify."""
    if not isinstance(environment, DockerEnvironment):
        raise TypeError(f"the docker backend cannot verify a {type(environment).__name__}")
    if environment.closed:
        raise InfraError("the environment was closed before verification", stage="verifier")
    scratch = Path(tempfile.mkdtemp(prefix="swe-residual-artifacts-"))
    try:
        target, _ = prepare_artifacts_dir(artifacts_dir, scratch / "collected")
        return _collect_and_verify(backend, environment, task, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _collect_and_verify(backend: DockerBackend, environment: DockerEnvironment, task: Task,
                        artifacts_dir: Path) -> VerifierOutput:
    plan = plan_verifier_environment(task)
    if task.track == "repo" and plan.source == SHARED:
        # Nothing the agent left running (a loop killing pytest, a reward forger) may share the
        # verifier's container. Machine-track processes are the state itself: kept. A separate
        # verifier needs no such kill: it never runs beside them, and what they could do to an
        # artifact during collection the agent could have done to its own work.
        environment.run(["sh", "-c", KILL_LEFTOVERS])
    collected, error = run_collect_steps(environment, task, {"APP_DIR": environment.workdir, "ARTIFACTS_DIR": ARTIFACTS_DIR})
    sources = [artifact.source for artifact in task.config.artifacts]
    for source in sources:
        _copy_out(environment, source, host_path(artifacts_dir, source))
    present = collected_sources(artifacts_dir, sources)
    if error is not None:
        return VerifierOutput(None, "", False, environment=plan.describe(), collect=collected,
                              artifacts=tuple(present), error=error)
    if plan.source == SHARED:
        output = _run_tests(environment, task, fresh_container=False)
    else:
        output = _verify_separately(backend, environment, task, plan, artifacts_dir, present)
    return replace(output, environment=plan.describe(), collect=collected, artifacts=tuple(present))


def _verify_separately(backend: DockerBackend, environment: DockerEnvironment, task: Task,
                       plan: VerifierEnvironmentPlan, artifacts_dir: Path, present: list[str]) -> VerifierOutput:
    image, head = verifier_image(backend, task, plan)
    spec = StartSpec(environment.spec.run_id, environment.spec.item_id + ":verifier", environment.spec.attempt)
    with backend.start_container(image, task, spec, plan.network, head, cpus=plan.cpus, memory_mb=plan.memory_mb,
                                 env=plan.env, kind="verifier") as fresh:
        # The artifacts at their own paths and, unless bundled, the hidden tests: one archive.
        entries = [(source, host_path(artifacts_dir, source)) for source in present]
        if not plan.bundled_tests:
            entries.append((TESTS_DIR, task.tests_dir))
        if entries:
            fresh.copy_in(rooted_archive(entries), "/")
        return _run_tests(fresh, task, fresh_container=True)


def verifier_image(backend: DockerBackend, task: Task, plan: VerifierEnvironmentPlan) -> tuple[str, str | None]:
    """(image id, base commit) of a separate verifier's environment, built when needed; resolved
    once per task directory and backend, not once per item."""
    key = (str(task.path), plan.source, plan.image or "")
    if key not in backend.verifier_images:
        backend.verifier_images[key] = _resolve_verifier_image(backend, task, plan)
    return backend.verifier_images[key]


def _resolve_verifier_image(backend: DockerBackend, task: Task, plan: VerifierEnvironmentPlan) -> tuple[str, str | None]:
    if plan.source == TASK_ENVIRONMENT:
        prepared = backend.task_image(task)  # the clean image: the base commit, never the state
        return prepared.image_id, prepared.head
    if plan.source == TESTS_DOCKERFILE:
        dockerfile = task.tests_dir / "Dockerfile"
        bases = dockerfile_bases(dockerfile.read_text(encoding="utf-8", errors="replace"))
        ensure_dockerfile_bases(backend, task, bases, field="verifier")
        timeout = task.config.verifier_environment.build_timeout_sec if task.config.verifier_environment \
            else task.config.build_timeout_sec
        _, image_id = backend.build_image(task.tests_dir, dockerfile, repo=VERIFIER_REPO, name=task.id, timeout_sec=timeout)
        return image_id, None
    assert plan.image is not None
    return named_image_id(backend, task, plan.image, field="verifier.environment.docker_image"), None


def _copy_out(environment: DockerEnvironment, source: str, target: Path) -> None:
    """Copy an artifact (a file or a directory) out of the container; absent: nothing."""
    directory, files = environment.copy_out_entry(source, MAX_ARTIFACT_FILE_BYTES)
    for relative, data in files.items():
        path = target / relative if directory else target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _run_tests(environment: DockerEnvironment, task: Task, *, fresh_container: bool) -> VerifierOutput:
    """Run test.sh: in the agent's container (the tests uploaded only now), or in a fresh one
    that already holds them."""
    # Whatever the agent put at /tests or in the log directory (a reward file of its own
    # making) is deleted first; a fresh container gets an empty log directory.
    clear = f"rm -rf {VERIFIER_LOGS_DIR} && mkdir -p {VERIFIER_LOGS_DIR}"
    if not fresh_container:
        done = environment.run(["sh", "-c", f"rm -rf {TESTS_DIR} && {clear}"])
        if done.exit_code != 0:
            raise InfraError(f"could not clear the verifier's directories: {done.stderr.decode(errors='replace')[-500:]}",
                             stage="verifier")
        environment.copy_in(rooted_archive([(TESTS_DIR, task.tests_dir)]), "/")
    env = {**task.config.verifier_env, "TESTS_DIR": TESTS_DIR, "VERIFIER_LOGS_DIR": VERIFIER_LOGS_DIR,
           "APP_DIR": environment.workdir, "ARTIFACTS_DIR": ARTIFACTS_DIR}
    command = f"{clear} && exec bash {TESTS_DIR}/test.sh 2>&1" if fresh_container else f"exec bash {TESTS_DIR}/test.sh 2>&1"
    result = to_result(environment.run(["sh", "-c", command], timeout_sec=task.config.verifier_timeout_sec, env=env,
                                       cwd=environment.workdir))
    files = environment.copy_out_directory(VERIFIER_LOGS_DIR, MAX_LOG_FILE_BYTES)
    return VerifierOutput(
        exit_code=result.exit_code,
        output=result.stdout + result.stderr,
        timed_out=result.timed_out,
        files=files,
        duration_sec=result.duration_sec,
    )
