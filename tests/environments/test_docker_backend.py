"""The docker backend against a real engine (DESIGN §9, issue 3).

Builds the Debian base image once (reused when present), a tiny task in tmp_path, and checks
starts, states, exec timeouts, limits, the verifier contract and cleanup. Every test ends with
no container or temporary image of this process left, and no untagged image this process committed
(only what this run labelled is looked at: other users of the engine may have their own).
"""

from __future__ import annotations

import dataclasses

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse

from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker import (
    LABEL,
    TEMP_REPO,
    DockerBackend,
    DockerEnvironment,
    dockerfile_bases,
    remove_cached_images,
    sweep,
)
from swe_residual.dataset.errors import DatasetError, InfraError
from swe_residual.environments.docker.base_image import BASE_IMAGE, debian_mirror, ensure_base_image, parse_deb822, parse_one_line
from swe_residual.environments.patches import capture_patch
from swe_residual.dataset.states.state import ResidualState, load_state
from swe_residual.dataset.task import Task, load_task

pytestmark = requires_docker

ROOT = Path(__file__).resolve().parents[2]

CALC = '''\
def add(a, b):
    return a - b


def mul(a, b):
    return a * b
'''

TEST_SH = '''\
#!/bin/bash
TESTS_DIR="${TESTS_DIR:-/tests}"; LOGS_DIR="${VERIFIER_LOGS_DIR:-/logs/verifier}"; APP_DIR="${APP_DIR:-/app}"
mkdir -p "$LOGS_DIR"; cd "$APP_DIR" || { echo -1 > "$LOGS_DIR/reward.txt"; exit 1; }
export PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$APP_DIR"
python3 -m pytest -c "$TESTS_DIR/pytest.ini" --rootdir "$TESTS_DIR" -q "$TESTS_DIR" --junitxml="$LOGS_DIR/junit.xml"
rc=$?; case "$rc" in 0) echo 1 > "$LOGS_DIR/reward.txt";; 1) echo 0 > "$LOGS_DIR/reward.txt";; *) echo -1 > "$LOGS_DIR/reward.txt";; esac; exit 0
'''

HIDDEN_TEST = '''\
from calc import add, mul


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6
'''

# A fixed date: the base commit is the same whenever the image is (re)built, also when a
# parallel test pruned the build cache in between.
DOCKERFILE = '''\
ARG BASE_IMAGE=swe-residual-base:bookworm
FROM ${BASE_IMAGE}
COPY repo/ /app/
WORKDIR /app
RUN git init -q -b main . && git add -A \\
 && GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z \\
    git -c user.name=t -c user.email=t@localhost -c commit.gpgsign=false commit -q -m "Base commit"
'''

# The predecessor touched the right file but left the bug, and added a notes file.
RESIDUAL_PATCH = "\n".join([
    "diff --git a/calc.py b/calc.py",
    "--- a/calc.py",
    "+++ b/calc.py",
    "@@ -1,6 +1,7 @@",
    " def add(a, b):",
    "+    # TODO: check the sign",
    "     return a - b",
    " ",
    " ",
    " def mul(a, b):",
    "     return a * b",
    "diff --git a/NOTES.md b/NOTES.md",
    "new file mode 100644",
    "--- /dev/null",
    "+++ b/NOTES.md",
    "@@ -0,0 +1 @@",
    "+predecessor was here",
    "",
])

FIXED_CALC = CALC.replace("a - b", "a + b")


def make_task(root: Path, task_id: str, *, mode: str = "shared") -> Path:
    task = root / task_id
    (task / "environment" / "repo").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "solution").mkdir()
    (task / "task.toml").write_text(textwrap.dedent(f'''\
        schema_version = "1.1"
        [metadata]
        repo_dir = "environment/repo"
        [environment]
        cpus = 1
        memory_mb = 512
        network_mode = "no-network"
        [verifier]
        timeout_sec = 120
        environment_mode = "{mode}"
    '''))
    (task / "instruction.md").write_text("Fix add() in calc.py.\n")
    # The id in the commit step: two sessions on one engine (xdist workers) never share that
    # layer through the builder's cache, so each task's base commit is its own.
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE.replace('"Base commit"', f'"Base commit" && : {task_id}'))
    (task / "environment" / "repo" / "calc.py").write_text(CALC)
    (task / "tests" / "test.sh").write_text(TEST_SH)
    (task / "tests" / "test.sh").chmod(0o755)
    (task / "tests" / "test_calc.py").write_text(HIDDEN_TEST)
    (task / "tests" / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\nsed -i 's/a - b/a + b/' /app/calc.py\n")
    state = task / "residual" / "pred-1"
    state.mkdir(parents=True)
    (state / "state.toml").write_text('predecessor = "pred"\nsource_run = "r1"\ntrack = "repo"\n')
    (state / "changes.patch").write_text(RESIDUAL_PATCH)
    return task


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def base_image() -> str:
    return ensure_base_image(progress=lambda line: print(line, file=sys.stderr))


@pytest.fixture(scope="session")
def task_root(tmp_path_factory: pytest.TempPathFactory, base_image: str) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("tasks")
    yield root


@pytest.fixture(scope="session")
def task_id(task_root: Path) -> Iterator[str]:
    # Unique per session, so parallel runs on one engine never share (or delete) each other's
    # images; all of them are removed at the end.
    name = f"calc-{secrets.token_hex(3)}"
    make_task(task_root, name)
    yield name
    remove_cached_images(name)
    assert _docker("images", "-q", "--filter", f"reference=swe-residual-*:{name}-*") == ""
    # The end of the session: nothing of ours is left running or dangling.
    assert _containers(f"label={LABEL}.pid={os.getpid()}") == []
    assert _temp_images(f"label={LABEL}.pid={os.getpid()}") == []
    assert _our_dangling() == []


@pytest.fixture
def task(task_root: Path, task_id: str) -> Task:
    return load_task(task_root / task_id)


@pytest.fixture
def state(task: Task) -> ResidualState:
    return load_state(task, task.path / "residual" / "pred-1")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def progress() -> list[str]:
    return []


@pytest.fixture
def backend(cache_dir: Path, progress: list[str]) -> Iterator[DockerBackend]:
    with DockerBackend(cache_dir=cache_dir, progress=progress.append) as created:
        yield created


@pytest.fixture(autouse=True)
def no_leftovers(base_image: str) -> Iterator[None]:
    yield
    assert _containers(f"label={LABEL}.pid={os.getpid()}") == []
    assert _temp_images(f"label={LABEL}.pid={os.getpid()}") == []
    assert _our_dangling() == []


def _spec(item: str = "item", attempt: int = 1) -> StartSpec:
    return StartSpec(run_id="test-run", item_id=item, attempt=attempt)


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout


def _containers(*filters: str) -> list[str]:
    args = [arg for value in filters for arg in ("--filter", value)]
    return _docker("ps", "-aq", *args).split()


def _our_dangling() -> list[str]:
    """Untagged images committed by this process (commits carry the owner labels). Builds cannot
    be labelled without an extra layer, so task images are checked by their repository name."""
    return _docker("images", "-q", "--filter", "dangling=true", "--filter", f"label={LABEL}.pid={os.getpid()}").split()


def _temp_images(*filters: str) -> list[str]:
    args = [arg for value in filters for arg in ("--filter", value)]
    return _docker("images", "-q", "--filter", f"reference={TEMP_REPO}", *args).split()


def _inspect(container: str) -> dict:
    return json.loads(_docker("inspect", container))[0]


def _sh(env: DockerEnvironment, command: str) -> str:
    result = env.exec(command, timeout_sec=60)
    assert result.exit_code == 0, result.output
    return result.stdout


# -- the base image and its recipe -----------------------------------------------------------
@pytest.mark.slow
def test_base_image_is_reused_and_has_the_tools(base_image: str) -> None:
    lines: list[str] = []
    assert ensure_base_image(progress=lines.append) == base_image
    assert "up to date" in lines[0]
    out = _docker("run", "--rm", "--network", "none", BASE_IMAGE, "sh", "-c",
                  "python3 -m pytest --version && git --version && patch --version && ps --version && timeout --version")
    assert "git version" in out and "GNU patch" in out


def test_apt_sources_are_parsed_from_both_formats(tmp_path: Path) -> None:
    deb822 = parse_deb822("Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n"
                          "Components: main\n\nTypes: deb-src\nURIs: http://x.invalid\nSuites: bookworm\n", tmp_path)
    mirror = "http://mirror.invalid/debian"
    assert [(s.uri, s.suite) for s in deb822] == [(mirror, "bookworm"), (mirror, "bookworm-updates")]
    one_line = parse_one_line("# c\ndeb [arch=amd64] http://m.invalid/debian trixie main\n", tmp_path)
    assert debian_mirror("bookworm", one_line).uri == "http://m.invalid/debian"
    with pytest.raises(InfraError, match="no Debian mirror"):
        debian_mirror("bookworm", [])


def test_dockerfile_bases_substitute_args() -> None:
    text = "ARG BASE_IMAGE=swe-residual-base:bookworm\nFROM ${BASE_IMAGE} AS build\nFROM build\nFROM scratch\n"
    assert dockerfile_bases(text) == [BASE_IMAGE]


# -- starts ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_clean_start_is_the_base_commit(backend: DockerBackend, task: Task) -> None:
    with backend.start(task, None, _spec()) as env:
        assert env.workdir == "/app"
        assert _sh(env, "git rev-parse HEAD").strip() == env.base_commit
        assert _sh(env, "git status --porcelain") == ""
        assert _sh(env, "pwd").strip() == "/app"
        assert not env.exec("test -e /tests").exit_code == 0
        assert capture_patch(env) == ""


def test_residual_state_is_uncommitted_changes(backend: DockerBackend, task: Task, state: ResidualState) -> None:
    with backend.start(task, state, _spec()) as env:
        assert _sh(env, "git rev-parse HEAD").strip() == env.base_commit
        assert _sh(env, "git log --oneline | wc -l").strip() == "1"
        status = _sh(env, "git status --porcelain").splitlines()
        assert sorted(status) == [" M calc.py", "?? NOTES.md"]
        assert "+    # TODO: check the sign" in _sh(env, "git diff")
        captured = capture_patch(env)
        assert "NOTES.md" in captured and "TODO" in captured
        assert _sh(env, f"ls -A {env.scratch_dir}") == ""  # the applied patch file is gone


@pytest.mark.slow
def test_rollouts_of_one_state_are_independent(
    backend: DockerBackend, task: Task, state: ResidualState, progress: list[str]
) -> None:
    with backend.start(task, state, _spec("a")) as first, backend.start(task, state, _spec("b")) as second:
        assert first.container_id != second.container_id
        first.write_file("calc.py", FIXED_CALC.encode())
        _sh(first, "echo mine > only_in_first.txt && rm NOTES.md")
        assert second.read_file("calc.py").decode().count("a - b") == 1
        assert _sh(second, "ls").split() == ["NOTES.md", "calc.py"]
        assert sorted(_sh(first, "git status --porcelain").splitlines()) == [" M calc.py", "?? only_in_first.txt"]
    # Each rollout applied the patch itself; the state's check ran at most once for both
    # (none if an earlier test checked it), and no snapshot was made.
    assert sum("checking state" in line for line in progress) <= 1
    assert not any("snapshotting" in line for line in progress)
    with backend.start(task, state, _spec("c")) as third:
        assert sorted(_sh(third, "git status --porcelain").splitlines()) == [" M calc.py", "?? NOTES.md"]


@pytest.mark.slow
def test_second_prepare_reuses_and_changed_dockerfile_rebuilds(
    cache_dir: Path, task: Task, tmp_path: Path
) -> None:
    first_lines: list[str] = []
    with DockerBackend(cache_dir=cache_dir, progress=first_lines.append) as first:
        first_image = first.task_image(task)
    lines: list[str] = []
    with DockerBackend(cache_dir=cache_dir, progress=lines.append) as second:
        second.prepare(task)
        again = second.task_image(task)
        assert again.image_id == first_image.image_id
        assert not any(line.startswith("building") for line in lines)
        # Same task id, changed Dockerfile: a new tag, a new image.
        changed_dir = tmp_path / task.id
        shutil.copytree(task.path, changed_dir)
        dockerfile = changed_dir / "environment" / "Dockerfile"
        dockerfile.write_text(dockerfile.read_text() + "RUN echo changed > /etc/changed\n")
        changed = second.task_image(load_task(changed_dir))
        assert changed.image_id != first_image.image_id and changed.reference != first_image.reference
        assert any(line.startswith("building") for line in lines)
        assert changed.head == first_image.head  # same repository, same base commit
    _docker("image", "rm", changed.reference)


PREPARE = '''
import sys
from pathlib import Path
from swe_residual.environments.docker import DockerBackend
from swe_residual.dataset.task import load_task
with DockerBackend(cache_dir=Path(sys.argv[2]), progress=lambda line: print(line, flush=True)) as backend:
    print("image", backend.task_image(load_task(Path(sys.argv[1]))).image_id, flush=True)
'''


@pytest.mark.slow
def test_parallel_processes_build_once(task: Task, cache_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / task.id
    shutil.copytree(task.path, other)
    dockerfile = other / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f"RUN echo {secrets.token_hex(4)} > /etc/variant\n")
    workers = [
        subprocess.Popen([sys.executable, "-c", PREPARE, str(other), str(cache_dir)], stdout=subprocess.PIPE,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        for _ in range(2)
    ]
    outputs = [worker.communicate(timeout=300)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0]
    lines = "".join(outputs).splitlines()
    assert sum(line.startswith("building") for line in lines) == 1
    images = {line.split()[1] for line in lines if line.startswith("image ")}
    assert len(images) == 1
    _docker("image", "rm", images.pop())


def test_base_commit_hash_is_checked(backend: DockerBackend, task: Task, tmp_path: Path) -> None:
    other = tmp_path / task.id
    shutil.copytree(task.path, other)
    toml = other / "task.toml"
    toml.write_text(toml.read_text().replace("[metadata]\n", '[metadata]\nbase_commit_hash = "0000"\n'))
    with pytest.raises(DatasetError, match="base_commit_hash"):
        backend.prepare(load_task(other))


def test_missing_docker_image_is_one_error_saying_how_to_provide_it(backend: DockerBackend, task: Task, tmp_path: Path) -> None:
    """No such image anywhere, and no Dockerfile to stand in for it: one error naming the field,
    whether no registry answers (here: the offline route has nothing to build) or one refuses."""
    other = tmp_path / task.id
    shutil.copytree(task.path, other)
    shutil.rmtree(other / "environment")
    toml = other / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]\n", '[environment]\ndocker_image = "no-such-image:1"\n'))
    with pytest.raises(DatasetError, match="'no-such-image:1'") as raised:
        backend.prepare(load_task(other))
    assert raised.value.field == "environment.docker_image"
    assert "images.toml" in str(raised.value) or "docker login" in str(raised.value)


def _patched_copy(task: Task, tmp_path: Path, old: str, new: str) -> tuple[Task, ResidualState]:
    """A copy of `task` whose state `pred-1` has `old` replaced by `new` in its patch: a state of
    its own (a new content address), so no earlier test's check or snapshot of it counts."""
    other = tmp_path / task.id
    shutil.copytree(task.path, other)
    patch = other / "residual" / "pred-1" / "changes.patch"
    patch.write_text(RESIDUAL_PATCH.replace(old, new))
    other_task = load_task(other)
    return other_task, load_state(other_task, patch.parent)


def test_patch_that_does_not_apply_is_a_dataset_error(backend: DockerBackend, task: Task, tmp_path: Path) -> None:
    other_task, other_state = _patched_copy(task, tmp_path, " def add(a, b):\n+", " def add(x, y):\n+")
    with pytest.raises(DatasetError, match="does not apply"):
        backend.start(other_task, other_state, _spec())


@pytest.mark.slow
def test_state_validation_hook_runs_once_and_can_reject(cache_dir: Path, task: Task, tmp_path: Path) -> None:
    other_task, other_state = _patched_copy(task, tmp_path, "predecessor was here", "another predecessor")
    seen: list[dict[str, bytes]] = []

    def reject(backend: DockerBackend, env: DockerEnvironment, task: Task, state: ResidualState) -> None:
        seen.append(backend.run_verifier(env, task).files)
        raise DatasetError(state.path / "state.toml", "verdict differs")

    def accept(backend: DockerBackend, env: DockerEnvironment, task: Task, state: ResidualState) -> None:
        seen.append(backend.run_verifier(env, task).files)

    with DockerBackend(cache_dir=cache_dir, validate_state=reject, progress=lambda _: None) as backend:
        with pytest.raises(DatasetError, match="verdict differs"):
            backend.start(other_task, other_state, _spec())
        tag = backend.state_tag(other_task, other_state)
    assert _docker("images", "-q", tag) == ""  # rejected: never snapshotted under its tag
    with DockerBackend(cache_dir=cache_dir, validate_state=accept, progress=lambda _: None) as backend:
        for item in ("x", "y"):
            with backend.start(other_task, other_state, _spec(item)) as env:
                # The validation's verifier ran in a throwaway container: nothing of it here.
                assert env.exec("test -e /tests || test -e /logs/verifier").exit_code == 1
                assert "another predecessor" in env.read_file("NOTES.md").decode()  # the patch, applied at start
    assert [files["reward.txt"] for files in seen] == [b"0\n", b"0\n"]  # once rejected, once accepted
    assert _docker("images", "-q", tag) == ""  # a patch state needs no snapshot image
    # A later run (a new backend on the same cache) does not validate the same state again.
    with DockerBackend(cache_dir=cache_dir, validate_state=accept, progress=lambda _: None) as backend:
        with backend.start(other_task, other_state, _spec("z")) as env:
            assert "another predecessor" in env.read_file("NOTES.md").decode()
    assert len(seen) == 2


@pytest.mark.slow
def test_repo_state_snapshots_when_asked(cache_dir: Path, task: Task, tmp_path: Path) -> None:
    """The snapshot way (kept for the set-up benchmark): one commit per state, validated once,
    every instance a container of it with the patch already in the tree."""
    other_task, other_state = _patched_copy(task, tmp_path, "predecessor was here", "a snapshotted predecessor")
    seen: list[str] = []

    def accept(backend: DockerBackend, env: DockerEnvironment, task: Task, state: ResidualState) -> None:
        seen.append(state.id)

    with DockerBackend(cache_dir=cache_dir, validate_state=accept, progress=lambda _: None,
                       snapshot_repo_states=True) as backend:
        tag = backend.state_tag(other_task, other_state)
        for item in ("x", "y"):
            with backend.start(other_task, other_state, _spec(item)) as env:
                assert "a snapshotted predecessor" in env.read_file("NOTES.md").decode()
                assert env.exec("test -e /tests || test -e /logs/verifier").exit_code == 1
    assert seen == ["pred-1"] and _docker("images", "-q", tag) != ""
    _docker("image", "rm", tag)


@pytest.mark.slow
def test_machine_track_state_is_replayed_and_snapshotted(backend: DockerBackend, task: Task, tmp_path: Path) -> None:
    other = tmp_path / task.id
    shutil.copytree(task.path, other)
    toml = other / "task.toml"
    toml.write_text(toml.read_text().replace("[metadata]\n", '[metadata]\ntrack = "machine"\n'))
    state_dir = other / "residual" / "pred-1"
    (state_dir / "changes.patch").unlink()
    (state_dir / "state.toml").write_text('predecessor = "pred"\ntrack = "machine"\n')
    commands = [{"command": "mkdir -p /etc/tool && echo configured > /etc/tool/tool.conf"},
                {"command": "echo edited >> calc.py", "cwd": "."}]
    (state_dir / "commands.jsonl").write_text("".join(json.dumps(c) + "\n" for c in commands))
    machine = load_task(other)
    machine_state = load_state(machine, state_dir)
    for item in ("m1", "m2"):
        with backend.start(machine, machine_state, _spec(item)) as env:
            assert env.read_file("/etc/tool/tool.conf") == b"configured\n"
            assert _sh(env, "git status --porcelain").strip() == "M calc.py"
    _docker("image", "rm", backend.state_tag(machine, machine_state))


# -- exec, files, limits -----------------------------------------------------------------------
@pytest.mark.slow
def test_exec_timeout_kills_inside_the_container(backend: DockerBackend, task: Task) -> None:
    with backend.start(task, None, _spec()) as env:
        started = time.monotonic()
        result = env.exec("sleep 300 & setsid sleep 301 & echo started; sleep 302", timeout_sec=2)
        assert result.timed_out and result.exit_code is None
        assert "started" in result.stdout
        assert time.monotonic() - started < 15
        processes = _sh(env, "ps -eo stat,args")
        assert "sleep 30" not in processes, processes
        # The environment still works after a timeout.
        ok = env.exec("echo fine", timeout_sec=10)
        assert ok.exit_code == 0 and ok.stdout == "fine\n" and not ok.timed_out


def test_exec_env_cwd_and_exit_code(backend: DockerBackend, task: Task) -> None:
    with backend.start(task, None, _spec()) as env:
        _sh(env, "mkdir -p sub")
        result = env.exec('echo "$GREETING" && pwd && echo err >&2 && exit 3', env={"GREETING": "hi there"}, cwd="sub")
        assert (result.exit_code, result.stdout, result.stderr) == (3, "hi there\n/app/sub\n", "err\n")
        assert env.exec("nonexistent-command").exit_code == 127
        with pytest.raises(FileNotFoundError):
            env.exec("true", cwd="no/such/dir")


def test_lost_container_is_an_infra_error(backend: DockerBackend, task: Task) -> None:
    with backend.start(task, None, _spec()) as env:
        _docker("rm", "-f", env.container_id)
        with pytest.raises(InfraError, match="lost"):
            env.exec("true")
        with pytest.raises(InfraError):
            env.read_file("calc.py")


def test_files_are_binary_safe(backend: DockerBackend, task: Task) -> None:
    data = bytes(range(256)) * 64
    with backend.start(task, None, _spec()) as env:
        env.write_file("deep/dir/blob.bin", data)
        assert env.read_file("/app/deep/dir/blob.bin") == data
        env.write_file(f"{env.scratch_dir}/x", b"")
        assert env.read_file(f"{env.scratch_dir}/x") == b""
        with pytest.raises(FileNotFoundError):
            env.read_file("missing.txt")


def test_more_cpus_than_the_engine_has_are_all_it_has(backend: DockerBackend, task: Task) -> None:
    # A published task asks for what its authors' machine had (mcmc-sampling-stan: 4); the engine
    # refuses a container asking for more CPUs than it has: the container gets all of them.
    said: list[str] = []
    backend.progress = said.append
    engine_cpus = int(backend.client.info()["NCPU"])
    greedy = dataclasses.replace(task, config=dataclasses.replace(task.config, cpus=engine_cpus + 62))
    with backend.start(greedy, None, _spec("greedy")) as env:
        assert _inspect(env.container_id)["HostConfig"]["NanoCpus"] == engine_cpus * 1_000_000_000
    assert [line for line in said if "cpus" in line] == [
        f"{task.id}: [environment] cpus = {engine_cpus + 62}, but the engine has {engine_cpus}: its containers get {engine_cpus}"]


def test_network_none_and_limits(backend: DockerBackend, task: Task) -> None:
    with backend.start(task, None, _spec("limits")) as env:
        info = _inspect(env.container_id)
        host = info["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert _sh(env, "ls /sys/class/net").split() == ["lo"]
        assert host["NanoCpus"] == 1_000_000_000
        assert host["Memory"] == 512 * 1024 * 1024 and host["MemorySwap"] == 512 * 1024 * 1024
        assert host["PidsLimit"] == 4096
        assert host["Privileged"] is False
        assert host["CapDrop"] == ["ALL"] and "NET_RAW" not in host["CapAdd"]
        # chroot stays: published tasks' tests run programs under it, as in Harbor's containers
        assert _sh(env, "chroot / true && echo chrooted").strip() == "chrooted"
        labels = info["Config"]["Labels"]
        assert labels[LABEL] == "1" and labels[f"{LABEL}.run"] == "test-run"
        assert labels[f"{LABEL}.item"] == "limits" and labels[f"{LABEL}.pid"] == str(os.getpid())


def test_network_mode_comes_from_task_toml(backend: DockerBackend, task: Task, tmp_path: Path) -> None:
    other = tmp_path / task.id
    shutil.copytree(task.path, other)
    toml = other / "task.toml"
    toml.write_text(toml.read_text() + '[agent]\nnetwork_mode = "public"\n')
    with backend.start(load_task(other), None, _spec()) as env:
        assert _inspect(env.container_id)["HostConfig"]["NetworkMode"] == "bridge"


# -- the verifier -------------------------------------------------------------------------------
@pytest.mark.slow
def test_hidden_tests_arrive_only_with_the_verifier(backend: DockerBackend, task: Task, state: ResidualState) -> None:
    with backend.start(task, state, _spec()) as env:
        assert env.exec("ls /tests").exit_code != 0
        _sh(env, "mkdir -p /tests && echo fake > /tests/test_fake.py")
        output = backend.run_verifier(env, task)
        assert _sh(env, "ls /tests").split() == ["pytest.ini", "test.sh", "test_calc.py"]
        assert output.files["reward.txt"] == b"0\n"
        assert b"test_add" in output.files["junit.xml"]
        assert output.exit_code == 0 and not output.timed_out
        assert "1 failed, 1 passed" in output.output


def test_stale_reward_files_gain_nothing(backend: DockerBackend, task: Task, state: ResidualState) -> None:
    with backend.start(task, state, _spec()) as env:
        _sh(env, "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt "
                 "&& echo '{\"reward\": 1}' > /logs/verifier/reward.json && echo x > /logs/verifier/old.log")
        output = backend.run_verifier(env, task)
        assert output.files["reward.txt"] == b"0\n"
        assert "reward.json" not in output.files and "old.log" not in output.files


def test_oracle_fix_passes_in_shared_mode(backend: DockerBackend, task: Task, state: ResidualState) -> None:
    with backend.start(task, state, _spec()) as env:
        _sh(env, "sed -i 's/a - b/a + b/' calc.py")
        assert backend.run_verifier(env, task).files["reward.txt"] == b"1\n"


@pytest.mark.slow
def test_verifier_timeout_kills_inside(backend: DockerBackend, task: Task, tmp_path: Path) -> None:
    other = tmp_path / task.id
    shutil.copytree(task.path, other)
    toml = other / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 120", "timeout_sec = 2"))
    (other / "tests" / "test.sh").write_text("#!/bin/bash\nsleep 303\n")
    slow = load_task(other)
    with backend.start(slow, None, _spec()) as env:
        output = backend.run_verifier(env, slow)
        assert output.timed_out and output.exit_code is None and output.files == {}
        assert "sleep 303" not in _sh(env, "ps -eo args")


@pytest.mark.slow
def test_separate_mode_verifies_a_fresh_container(backend: DockerBackend, task_root: Path, tmp_path: Path, task: Task) -> None:
    other = tmp_path / task.id
    shutil.copytree(task.path, other)
    toml = other / "task.toml"
    # Harbor's separate contract: the agent's work reaches the fresh verifier only as an artifact.
    toml.write_text('artifacts = ["/logs/artifacts/work.patch"]\n'
                    + toml.read_text().replace('environment_mode = "shared"', 'environment_mode = "separate"')
                    + "[[verifier.collect]]\ncommand = 'mkdir -p /logs/artifacts && git diff HEAD > /logs/artifacts/work.patch'\n")
    test_sh = other / "tests" / "test.sh"
    test_sh.write_text(test_sh.read_text().replace(
        'export PYTHONDONTWRITEBYTECODE', 'git apply /logs/artifacts/work.patch; export PYTHONDONTWRITEBYTECODE'))
    separate = load_task(other)
    assert separate.config.verifier_environment_mode == "separate"
    with backend.start(separate, load_state(separate, other / "residual" / "pred-1"), _spec("sep")) as env:
        env.write_file("calc.py", FIXED_CALC.encode())
        # Left running by the agent: in the shared container it would forge the reward.
        _sh(env, "nohup bash -c 'while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt;"
                 " echo forged > /app/forged.txt; sleep 0.05; done' >/dev/null 2>&1 &")
        before = set(_containers(f"label={LABEL}.pid={os.getpid()}"))
        output = backend.run_verifier(env, separate)
        assert output.files["reward.txt"] == b"1\n"
        assert "2 passed" in output.output
        # It ran elsewhere: the agent's container never saw the tests, the verifier's is gone.
        assert env.exec("test -e /tests").exit_code == 1
        assert set(_containers(f"label={LABEL}.pid={os.getpid()}")) == before
        assert _temp_images(f"label={LABEL}.pid={os.getpid()}") == []
        # The final state is untouched by the verifier and still running.
        assert env.read_file("calc.py") == FIXED_CALC.encode()


def test_separate_mode_with_a_forger_still_yields_the_true_verdict(backend: DockerBackend, tmp_path: Path, task: Task) -> None:
    other = tmp_path / task.id
    shutil.copytree(task.path, other)
    toml = other / "task.toml"
    toml.write_text(toml.read_text().replace('environment_mode = "shared"', 'environment_mode = "separate"'))
    separate = load_task(other)
    with backend.start(separate, None, _spec()) as env:
        _sh(env, "nohup bash -c 'while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt;"
                 " sleep 0.05; done' >/dev/null 2>&1 &")
        time.sleep(0.2)
        assert backend.run_verifier(env, separate).files["reward.txt"] == b"0\n"


# -- hygiene ----------------------------------------------------------------------------------
def test_close_is_idempotent_and_removes_everything(cache_dir: Path, task: Task) -> None:
    backend = DockerBackend(cache_dir=cache_dir, progress=lambda _: None)
    env = backend.start(task, None, _spec())
    backend.start(task, None, _spec("left-open"))  # never closed by its owner
    assert len(_containers(f"label={LABEL}.backend={backend.token}")) == 2
    env.close()
    env.close()
    backend.close()
    backend.close()
    assert _containers(f"label={LABEL}.backend={backend.token}") == []
    with pytest.raises(InfraError, match="closed"):
        backend.start(task, None, _spec())


def test_sweep_removes_containers_of_dead_owners(backend: DockerBackend, base_image: str) -> None:
    runs = secrets.token_hex(4)  # this session's runs: a sweep by run id must not reach another's
    dead = subprocess.Popen(["true"])
    dead.wait()
    created = _docker(
        "create", "--label", f"{LABEL}=1", "--label", f"{LABEL}.pid={dead.pid}",
        "--label", f"{LABEL}.host={os.uname().nodename}", "--label", f"{LABEL}.run=old-{runs}", BASE_IMAGE, "true",
    ).strip()
    alive = _docker(
        "create", "--label", f"{LABEL}=1", "--label", f"{LABEL}.pid={os.getpid()}",
        "--label", f"{LABEL}.host={os.uname().nodename}", "--label", f"{LABEL}.run=this-{runs}", BASE_IMAGE, "true",
    ).strip()
    try:
        assert sweep() >= 1
        remaining = _containers(f"label={LABEL}=1")
        assert created[:12] not in [c[:12] for c in remaining]
        assert alive[:12] in [c[:12] for c in remaining]
        assert backend.sweep(run_id=f"this-{runs}") == 1
        assert _containers(f"label={LABEL}.run=this-{runs}") == []
    finally:
        subprocess.run(["docker", "rm", "-f", created, alive], capture_output=True)


CHILD = '''
import sys, time
from pathlib import Path
from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker import DockerBackend
from swe_residual.dataset.task import load_task
backend = DockerBackend(cache_dir=Path(sys.argv[2]), progress=lambda _: None)
task = load_task(Path(sys.argv[1]))
envs = [backend.start(task, None, StartSpec("sig-run", f"child-{i}", 1)) for i in range(2)]
print("ready", flush=True)
time.sleep(120)
'''


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_removes_the_containers(task: Task, cache_dir: Path, signum: int) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(task.path), str(cache_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", child.stderr.read() if child.stderr else ""
        assert len(_containers(f"label={LABEL}.pid={child.pid}")) == 2
        child.send_signal(signum)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0  # it still died of the interruption
    assert _containers(f"label={LABEL}.pid={child.pid}") == []
