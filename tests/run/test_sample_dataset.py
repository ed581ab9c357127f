"""The bundled sample dataset, run end to end by the suite itself (local and docker backends).

`oracle` must solve every start and `noop` must fail every one with a valid verdict; each
state's measured per-test statuses must equal what its state.toml claims, fail, and pass at
least half of the acceptance tests.

The docker run is the README's first command as its users run it: never as root. Where the
tests run as root, it runs as a user the test makes (tests/engineuser.py: in the engine socket's
group, its own HOME and cache, its own copy of the checkout, `python -m pip install -e .` into its
own venv, no debootstrap on its PATH); the sample's base image must be on the engine already
(scripts/setup-tests puts it there). Elsewhere it runs as the user running the tests.
"""

from __future__ import annotations

import json
import os
import pwd
import time
import uuid
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from engineuser import EngineUser, engine_user

from swe_residual.dataset.load import load_dataset

SAMPLE = REPO_ROOT / "datasets" / "sample"


def _suite_args(backend: str, out: Path, run_id: str) -> list[str]:
    # On docker as the README's first command runs it, one worker per core (its items wait on
    # containers more than they compute); on the host serially, as the quick look runs.
    workers = ["-n", "2"] if backend == "docker" else []
    return ["-m", "pytest", "--agent=oracle", "--agent=noop", f"--backend={backend}", f"--results-dir={out}",
            f"--run-id={run_id}", "-q", "-p", "no:cacheprovider", *workers]


def _read_run(result: subprocess.CompletedProcess[str], backend: str, run_dir: Path,
              run_id: str) -> tuple[dict, list[dict]]:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "SWE-Residual summary" in result.stdout
    if backend == "docker":  # nothing of the run may outlive it
        left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=swe-residual.run={run_id}"],
                              capture_output=True, text=True, check=True).stdout.split()
        assert left == []
    summary = json.loads((run_dir / "summary.json").read_text())
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    return summary, records


def _as_engine_user(user: EngineUser, run_id: str) -> tuple[dict, list[dict]]:
    """The README's first command as `user`: its install, then the run, timed (--durations shows
    the whole; the parts are printed)."""
    found = user.run(["sh", "-c", "command -v debootstrap"])
    assert found.returncode != 0, f"debootstrap is on the user's PATH: {found.stdout}"
    started = time.monotonic()
    install = user.run([str(user.python), "-m", "pip", "install", "--disable-pip-version-check", "-e", "."], timeout=900)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    installed = time.monotonic()
    where = user.run([str(user.python), "-c", "import os, swe_residual; print(os.getuid(), swe_residual.__file__)"])
    uid, module = where.stdout.split()
    assert (int(uid), Path(module).parent) == (user.uid, user.checkout / "swe_residual"), where.stderr
    out = user.home / "out"
    # Directories of root's (a shared SWE_RESIDUAL_CACHE, a results directory elsewhere) are one clear
    # usage error before anything runs, never an infrastructure failure on every item.
    closed = Path(tempfile.mkdtemp(prefix="swe-residual-root-"))  # mode 0700, root's
    try:
        cache = user.run([str(user.python), *_suite_args("docker", out, f"{run_id}-cache")],
                         env=user.env(SWE_RESIDUAL_CACHE=str(closed)))
        results = user.run([str(user.python), *_suite_args("docker", closed / "out", f"{run_id}-out")])
    finally:
        closed.rmdir()
    assert cache.returncode == 4 and f"SWE_RESIDUAL_CACHE {closed} is not writable by this user" in cache.stderr, \
        cache.stdout[-2000:] + cache.stderr[-2000:]
    assert results.returncode == 4 and "--results-dir: the run directory" in results.stderr, \
        results.stdout[-2000:] + results.stderr[-2000:]
    result = user.run([str(user.python), *_suite_args("docker", out, run_id)], timeout=1500)
    print(f"as {user.name}: install {installed - started:.1f}s, run {time.monotonic() - installed:.1f}s")
    assert (user.home / ".cache" / "swe-residual").is_dir()  # the suite's cache is the user's own
    return _read_run(result, "docker", out / run_id, run_id)


@pytest.fixture(scope="module", params=["local", pytest.param("docker", marks=requires_docker)])
def sample_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list[dict]]:
    backend = request.param
    run_id = f"sample-{backend}-{uuid.uuid4().hex[:8]}"  # unique: the containers' label names it
    if backend == "docker" and os.geteuid() == 0:
        with engine_user(REPO_ROOT) as user:
            measured = _as_engine_user(user, run_id)
        with pytest.raises(KeyError):  # the user and its files went with the run
            pwd.getpwnam(user.name)
        assert not user.home.exists()
        return measured
    out = tmp_path_factory.mktemp("sample-run")
    cache = tmp_path_factory.mktemp("cache")
    result = subprocess.run([sys.executable, *_suite_args(backend, out, run_id)], cwd=REPO_ROOT, capture_output=True,
                            text=True, env={**os.environ, "SWE_RESIDUAL_CACHE": str(cache)}, timeout=1500)
    return _read_run(result, backend, out / run_id, run_id)


@pytest.mark.slow
def test_oracle_solves_everything_and_noop_nothing(sample_run) -> None:
    summary, records = sample_run
    for track, block in summary["agents"]["oracle"]["tracks"].items():
        assert (block["residual"], block["clean"]) == (100.0, 100.0), track
    for track, block in summary["agents"]["noop"]["tracks"].items():
        assert (block["residual"], block["clean"]) == (0.0, 0.0), track
    assert summary["infra"]["unresolved"] == 0
    noop = [r for r in records if r["agent"] == "noop"]
    assert noop and all(r["outcome"] == "failure" and r["reward"] == 0.0 for r in noop)


@pytest.mark.slow
def test_states_measure_what_their_state_toml_claims(sample_run) -> None:
    _, records = sample_run
    dataset = load_dataset(SAMPLE)
    measured = {(r["task"], r["state"]): r["tests"] for r in records if r["agent"] == "noop" and r["state"]}
    for entry in dataset.entries:
        for state in entry.states:
            if (entry.task.id, state.id) not in measured:
                assert entry.task.track == "machine"  # skipped on the local backend, with the reason
                continue
            tests = measured[(entry.task.id, state.id)]
            assert tests == state.initial_tests, f"{entry.task.id}/{state.id}"
            passed = sum(status == "passed" for status in tests.values())
            assert passed < len(tests), f"{entry.task.id}/{state.id} does not fail"
            assert passed >= len(tests) / 2, f"{entry.task.id}/{state.id} passes under half"
            recorded = state.raw["validation"]
            assert recorded["n_tests"] == len(tests) and recorded["pass_rate"] == pytest.approx(passed / len(tests))


@pytest.mark.unit
def test_sample_covers_the_paper_patterns() -> None:
    dataset = load_dataset(SAMPLE)
    patterns = {p for entry in dataset.entries for state in entry.states for p in state.raw.get("patterns", [])}
    assert {"left-out-file", "wrong-branch", "own-tests-pass", "artifacts", "new-file", "deleted-file",
            "binary-file"} <= patterns
    patches = "".join(state.read_patch() for entry in dataset.entries for state in entry.states)
    assert "new file mode" in patches and "deleted file mode" in patches and "GIT binary patch" in patches
    counts = {len(entry.states) for entry in dataset.entries if entry.task.track == "repo"}
    assert counts == {1, 2, 3}
