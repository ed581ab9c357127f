"""`--backend=harbor:ENV`: Harbor's own environment classes as the suite's backend (issue 49).

The real engine and Harbor unpatched (its venv, built by scripts/setup-tests; Docker Compose v2
as a docker CLI plugin): `harbor:docker` makes every start an instance of Harbor's
`DockerEnvironment`, driven by the helper process of Harbor's Python. One broad test walks a
task through it: a clean start with its base commit, exec's own semantics (stdout and stderr
apart, exit codes, a time limit that kills what it started), files, the task's no-network mode
kept (Harbor's docker environment cannot enforce it offline: its kernel probe and egress
sidecar are images pinned by digest on Docker Hub; the main service then runs with Harbor's own
no-network compose overlay), the suite's labels, the agent's processes killed, the separate
verifier, and nothing left after close (repo and machine states, both verifier modes and measured
statuses are the backend contract's cases, run on this row too). A cloud environment without its credentials stops the run before any item, naming the
variable, in Harbor's words.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from dockerneeded import docker_test, engine_needed  # noqa: F401 - engine_needed is autouse
from harbortool import harbor_bin_dir
from taskfactory import make_task

from swe_residual.dataset.load import load_dataset
from swe_residual.environments.base import StartSpec
from swe_residual.environments.capabilities import HARBOR_ENVIRONMENT
from swe_residual.environments.harbor import HarborBackend, HarborEnvironment
from swe_residual.environments.harbor.environment import unwrapped, wrapped
from swe_residual.environments.patches import apply_patch
from swe_residual.environments.registry import make_backend
from swe_residual.environments.verifier.outputs import evaluate


def test_the_exec_wrapper_gives_stdout_stderr_and_the_exit_code_back() -> None:
    nonce = "swe-residual-rc-0123"
    command = wrapped("echo hi; echo err >&2; exit 3", nonce, 5.0)
    assert "timeout -k" in command and nonce in command
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True)
    assert unwrapped(done.stdout, nonce) == (3, "hi\n", "err\n")
    # Output that never reached the end (the client was stopped) has no status.
    assert unwrapped("half", nonce) == (None, "half", "")


def test_a_cloud_environment_without_its_credentials_stops_before_any_item(tmp_path: Path) -> None:
    harbor_bin_dir()  # Harbor's venv, or a skip (a failure under CI)
    env = {key: value for key, value in os.environ.items() if not key.startswith("DAYTONA_")}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "--agent=noop", "--backend=harbor:daytona",
                           f"--dataset={REPO_ROOT / 'datasets' / 'sample'}", "-p", "no:cacheprovider",
                           f"--results-dir={tmp_path / 'results'}", "--run-id=no-credentials", "-q"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 4, output[-2000:]  # pytest's usage error
    assert "--backend=harbor:daytona" in output and "DAYTONA_API_KEY" in output, output[-2000:]
    assert not (tmp_path / "results").exists()  # no item ran, no record was written
    print(f"refused in {time.monotonic() - started:.1f}s")


def _labelled(token: str) -> list[str]:
    listed = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=swe-residual.backend={token}"],
                            capture_output=True, text=True, check=True)
    return listed.stdout.split()


@pytest.mark.slow
@docker_test
def test_harbor_docker_start_exec_files_network_and_leftovers(tmp_path: Path) -> None:
    """What only Harbor's environment does, on one clean start: exec's semantics, its no-network
    route, files, labels, the agent's leftovers stopped, and nothing left after close. Starts from
    states, both verifier modes and measured statuses are the backend contract's cases, which
    run on this row too (test_backend_contract.py, `harbor:docker`)."""
    harbor_bin_dir()
    make_task(tmp_path / "data", "calc")
    separate = load_dataset(tmp_path / "data").entry("calc")
    timings: dict[str, float] = {}
    backend = make_backend("harbor:docker", "h2-test")
    assert isinstance(backend, HarborBackend) and backend.name == "harbor:docker"
    try:
        started = time.monotonic()
        environment = backend.start(separate.task, None, StartSpec("h2-test", "calc", 1))
        timings["clean start"] = time.monotonic() - started
        assert isinstance(environment, HarborEnvironment) and environment.capabilities == HARBOR_ENVIRONMENT
        assert environment.workdir == "/app"
        head = environment.exec("git rev-parse HEAD")
        assert head.exit_code == 0 and head.stdout.strip() == environment.base_commit
        done = environment.exec("echo out; echo err >&2; exit 7")
        assert (done.exit_code, done.stdout, done.stderr) == (7, "out\n", "err\n")
        # The task's no-network mode holds: the main service has no interface but loopback.
        assert environment.exec("ls /sys/class/net").stdout.split() == ["lo"]
        assert environment.network_route in ("harbor", "overlay")
        # A time limit ends the command and kills what it started inside the environment.
        limited = environment.exec("sleep 120 & sleep 100", timeout_sec=2)
        assert limited.timed_out and limited.exit_code is None
        assert "sleep 1" not in environment.exec("ps -eo args").stdout
        environment.write_file("notes/blob.bin", b"\x00\xffbytes")
        assert environment.read_file("/app/notes/blob.bin") == b"\x00\xffbytes"
        environment.exec("rm -rf notes")
        # The suite's labels are on the environment's container (the docker backend's sweep knows them).
        assert len(_labelled(backend.token)) == 1
        # The agent's leftovers die before the verifier (repo track).
        environment.exec("setsid nohup sleep 300 >/dev/null 2>&1 &")
        assert environment.stop_processes() >= 1
        assert "sleep 300" not in environment.exec("ps -eo args").stdout
        apply_patch(environment, separate.task.solution_patch.read_text(), source="solution", strict=False)
        started = time.monotonic()
        verdict = evaluate(backend.run_verifier(environment, separate.task), separate.task.acceptance_tests())
        timings["separate verifier"] = time.monotonic() - started
        assert verdict.valid and verdict.success, verdict
        environment.close()  # Harbor's stop runs meanwhile: the item does not wait for it
        assert backend.wait_for_stops() == []
        assert _labelled(backend.token) == []  # the verifier's environment went too
    finally:
        backend.close()
    assert _labelled(backend.token) == []
    assert not backend.root.exists()
    # The image Harbor built is kept once per task content, labelled; no per-start Compose name is left.
    images = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True,
                            text=True, check=True).stdout.split()
    assert not [name for name in images if name.startswith("swe-residual-calc") and name.endswith("-main:latest")]
    kept = [name for name in images if name.startswith("swe-residual-harbor:calc-")]
    assert kept
    subprocess.run(["docker", "image", "rm", *kept], capture_output=True)  # this test's tasks only
    print(" ".join(f"{name}: {seconds:.1f}s;" for name, seconds in timings.items()))


@docker_test
def test_a_task_image_built_twice_at_once_is_kept_once_and_leaves_nothing_dangling() -> None:
    """Two starts of one task built by Compose at once (two workers, neither found the other's
    cache): the first image kept under the task's stable tag stays; the second goes with its
    per-project name (moving the tag would leave the first one dangling)."""
    import asyncio
    import io
    import secrets
    import tarfile

    import docker

    from swe_residual.environments.harbor.env_helper import keep_image

    client = docker.from_env()
    token = secrets.token_hex(4)
    tag = f"swe-residual-test/harbor-keep:{token}"

    def imported(project: str, content: bytes) -> str:  # a one-file image, as Compose would have named it
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w") as archive:
            info = tarfile.TarInfo("made")
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
        client.api.import_image_from_data(data.getvalue(), repository=f"{project}-main",
                                          changes=['LABEL swe-residual.test="harbor-keep"'])
        return client.images.get(f"{project}-main").id

    first = imported(f"p1-{token}", b"first build\n")
    second = imported(f"p2-{token}", b"second build\n")
    try:
        asyncio.run(keep_image(f"p1-{token}", tag))
        asyncio.run(keep_image(f"p2-{token}", tag))
        assert client.images.get(tag).id == first
        ids = {image.id for image in client.images.list(all=True, filters={"label": "swe-residual.test=harbor-keep"})}
        assert second not in ids and first in ids, ids  # the second is gone, not left dangling
        assert not client.images.list(name=f"p1-{token}-main") and not client.images.list(name=f"p2-{token}-main")
    finally:
        for name in (tag, f"p1-{token}-main", f"p2-{token}-main", second, first):
            try:
                client.images.remove(name)
            except docker.errors.ImageNotFound:
                pass
        client.close()
