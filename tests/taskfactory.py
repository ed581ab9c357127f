"""Small, real Harbor tasks written into a temporary directory for the project's tests.

Each task is a one-module Python program with a hidden pytest verifier (the same test.sh
contract as the sample dataset), a reference solution and residual states made with git,
so tests exercise the real loader, patch application, agents and verifier.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

from swe_residual.environments.base import BASE_COMMIT_ENV

TEST_SH = textwrap.dedent(
    """\
    #!/bin/bash
    TESTS_DIR="${TESTS_DIR:-/tests}"
    LOGS_DIR="${VERIFIER_LOGS_DIR:-/logs/verifier}"
    APP_DIR="${APP_DIR:-/app}"
    mkdir -p "$LOGS_DIR"
    cd "$APP_DIR" || { echo -1 > "$LOGS_DIR/reward.txt"; exit 1; }
    # Separate mode: the agent's work arrives as the collected workspace.patch (see COLLECT),
    # applied to the pristine repository; without it the tree is graded as it is.
    PATCH="${ARTIFACTS_DIR:-/logs/artifacts}/workspace.patch"
    if [ -s "$PATCH" ] && ! git -c safe.directory='*' apply --binary --whitespace=nowarn "$PATCH"; then
      echo 0 > "$LOGS_DIR/reward.txt"; exit 0
    fi
    # The repository is the agent's: nothing in it may stand in for the test runner. Isolated
    # mode (-I) puts neither the current directory, PYTHONPATH nor the user's site-packages on
    # the path (so no pytest.py, _pytest/, sitecustomize.py or .pth file of the agent's loads
    # before pytest), pytest adds the repository itself, the config file is ours (-c), and no
    # plugin is loaded from installed packages.
    unset PYTHONPATH
    export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
    python3 -I -B -m pytest -c "$TESTS_DIR/pytest.ini" --rootdir "$TESTS_DIR" -o pythonpath="$APP_DIR" \
      -q "$TESTS_DIR" --junitxml="$LOGS_DIR/junit.xml"
    rc=$?
    case "$rc" in
      0) echo 1 > "$LOGS_DIR/reward.txt" ;;
      1) echo 0 > "$LOGS_DIR/reward.txt" ;;
      *) echo -1 > "$LOGS_DIR/reward.txt" ;;
    esac
    exit 0
    """
)

# [[verifier.collect]] of separate-mode tasks (as in the sample dataset): the whole working tree,
# untracked files included, as a binary diff against the base (root) commit, through a
# temporary index and object store so the agent's repository is untouched.
COLLECT = textwrap.dedent(
    """\
    artifacts = ["/logs/artifacts/workspace.patch"]
    [[verifier.collect]]
    command = '''
    set -e
    cd "${APP_DIR:-/app}"
    out="${ARTIFACTS_DIR:-/logs/artifacts}"
    mkdir -p "$out"
    base="$(git -c safe.directory='*' rev-list --max-parents=0 HEAD | tail -n 1)"
    objects="$(cd "$(git -c safe.directory='*' rev-parse --git-common-dir)" && pwd)/objects"
    tmp="$(mktemp -d)" && mkdir "$tmp/objects"
    export GIT_INDEX_FILE="$tmp/index" GIT_OBJECT_DIRECTORY="$tmp/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$objects"
    git -c safe.directory='*' add -A
    git -c safe.directory='*' diff --binary --cached "$base" > "$out/workspace.patch"
    rm -rf "$tmp"
    '''
    timeout_sec = 60.0
    """
)

BASE_SOURCE = textwrap.dedent(
    """\
    def add(a, b):
        return a + b


    def clamp(value, low, high):
        return value
    """
)

SOLVED_SOURCE = textwrap.dedent(
    """\
    def add(a, b):
        return a + b


    def clamp(value, low, high):
        return max(low, min(value, high))
    """
)

HIDDEN_TESTS = textwrap.dedent(
    """\
    from calc import add, clamp


    def test_add():
        assert add(2, 3) == 5


    def test_clamp_low():
        assert clamp(-5, 0, 10) == 0


    def test_clamp_high():
        assert clamp(50, 0, 10) == 10


    def test_clamp_inside():
        assert clamp(5, 0, 10) == 5
    """
)

# The predecessor clamps only the low side: three of four tests pass, one still fails.
RESIDUAL_SOURCE = textwrap.dedent(
    """\
    def add(a, b):
        return a + b


    def clamp(value, low, high):
        return max(low, value)
    """
)


def git_diff_of(base_files: dict[str, str], new_files: dict[str, str | bytes | None], workdir: Path) -> str:
    """`git diff --binary` turning base_files into base_files updated by new_files (None deletes)."""
    repo = workdir / "diff-repo"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    for name, text in base_files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    env = {**os.environ, **BASE_COMMIT_ENV}
    run = lambda *args: subprocess.run(args, cwd=repo, env=env, check=True, capture_output=True, text=True)  # noqa: E731
    run("git", "init", "-q", "-b", "main", ".")
    run("git", "add", "-A")
    run("git", "commit", "-q", "-m", "Base commit")
    for name, content in new_files.items():
        path = repo / name
        if content is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    run("git", "add", "-A", "-f")
    diff = run("git", "diff", "--cached", "--binary", "HEAD").stdout
    shutil.rmtree(repo)
    return diff


def make_task(
    root: Path,
    task_id: str = "calc",
    *,
    states: dict[str, dict[str, str | bytes | None]] | None = None,
    predecessor: str = "drafter",
    verifier_env: dict[str, str] | None = None,
    test_sh: str = TEST_SH,
    agent_timeout_sec: float = 60.0,
    verifier_timeout_sec: float = 60.0,
    environment_mode: str = "separate",
) -> Path:
    """Write a task directory; `states` maps state id -> {path: new content or None}."""
    task = root / task_id
    base_files = {"calc.py": BASE_SOURCE, "README.md": "# calc\n"}
    repo = task / "environment" / "repo"
    for name, text in base_files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    env_lines = "".join(f'{k} = "{v}"\n' for k, v in (verifier_env or {}).items())
    (task / "task.toml").write_text(
        textwrap.dedent(
            f"""\
            schema_version = "1.3"
            {COLLECT.splitlines()[0] if environment_mode == "separate" else ""}
            [task]
            name = "test/{task_id}"
            [metadata]
            track = "repo"
            repo_dir = "environment/repo"
            [verifier]
            environment_mode = "{environment_mode}"
            timeout_sec = {verifier_timeout_sec}
            [verifier.env]
            """
        )
        + env_lines
        + ("\n".join(COLLECT.splitlines()[1:]) + "\n" if environment_mode == "separate" else "")
        + f"[agent]\ntimeout_sec = {agent_timeout_sec}\n"
        + '[environment]\nnetwork_mode = "no-network"\ncpus = 1\nmemory_mb = 512\n'
    )
    (task / "instruction.md").write_text("`clamp(value, low, high)` returns values outside the range. Make it clamp.\n")
    (task / "environment" / "Dockerfile").write_text(
        "ARG BASE_IMAGE=swe-residual-base:bookworm\nFROM ${BASE_IMAGE}\nCOPY repo/ /app/\nWORKDIR /app\n"
        "RUN git init -q -b main . && git add -A && GIT_AUTHOR_DATE=2026-01-01T00:00:00Z "
        "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z git -c user.name=swe-residual -c user.email=swe-residual@localhost "
        'commit -q -m "Base commit"\n'
    )
    tests = task / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text(test_sh)
    (tests / "test.sh").chmod(0o755)
    (tests / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (tests / "test_calc.py").write_text(HIDDEN_TESTS)
    (tests / "config.json").write_text(json.dumps({
        "f2p_node_ids": ["test_calc.test_clamp_low", "test_calc.test_clamp_high"],
        "p2p_node_ids": ["test_calc.test_add", "test_calc.test_clamp_inside"],
        "grade": "junit",
    }))
    solution = task / "solution"
    solution.mkdir()
    (solution / "solution.patch").write_text(git_diff_of(base_files, {"calc.py": SOLVED_SOURCE}, root / ".work"))
    if states is None:
        states = {f"{predecessor}-1": {"calc.py": RESIDUAL_SOURCE, "debug.log": "ran clamp\n"}}
    for state_id, changes in states.items():
        state_dir = task / "residual" / state_id
        state_dir.mkdir(parents=True)
        (state_dir / "changes.patch").write_text(git_diff_of(base_files, changes, root / ".work"))
        (state_dir / "state.toml").write_text(
            f'schema = 1\ntrack = "repo"\npredecessor = "{state_id.rsplit("-", 1)[0]}"\n'
            f'source_run = "test"\npatch = "changes.patch"\n'
            "[validation]\nvalid = true\nreward = 0.0\n[validation.tests]\n"
            '"test_calc.test_add" = "passed"\n"test_calc.test_clamp_low" = "passed"\n'
            '"test_calc.test_clamp_high" = "failed"\n"test_calc.test_clamp_inside" = "passed"\n'
        )
    shutil.rmtree(root / ".work", ignore_errors=True)
    return task


def assert_replayed_as_recorded(environment) -> None:
    """What the recorded terminal session left, in an instance of its state (the keystroke
    states of tests/environments/test_keystroke_replay.py and tests/harbor/test_terminus_import.py)."""
    # The unclosed quote swallowed the next line: it became text, it never ran.
    assert environment.read_file("quoted.txt") == b"one\ntouch /app/swallowed\n\n"
    assert environment.exec("test -e /app/swallowed").exit_code == 1
    # C-c is a keystroke: it interrupted `sleep 300` (status 130) and the shell went on.
    assert environment.read_file("interrupted").strip() == b"130"
    # The foreground loop keeps running after the replay (ten times a second). The shared Stage IV
    # build's ticker writes its file in place (`date > /app/tick`), so a read can fall between the
    # truncation and the write and see it empty: an empty read is no value. Polled for up to 20 s
    # (a loaded CI machine starved a fixed 0.6 s wait): a stopped loop never changes the file.
    deadline = time.monotonic() + 20

    def tick() -> str:
        assert time.monotonic() < deadline, "the ticker left running by the replay has stopped"
        return environment.exec("cat /app/tick").stdout.strip()

    first = tick()
    while not first:
        time.sleep(0.1)
        first = tick()
    while tick() in ("", first):
        time.sleep(0.3)


MACHINE_TASK_HEAD = "ARG BASE_IMAGE=swe-residual-base:bookworm\nFROM ${BASE_IMAGE}\n"
TMUX_INSTALL = "RUN apt-get update -qq && apt-get install -y -qq tmux >/dev/null\n"
# An image of a tmux task's first steps, kept as a cache as the base image is (tagged and
# labelled, never dangling): each test removes its task's image when done, and with it the tmux
# layer unless another image holds it; held here, every later tmux task builds from the engine's
# cache instead of installing tmux again (tens of seconds each, seven tests).
TMUX_LAYER = "swe-residual-test:tmux-layer"
_tmux_layer_kept = False


def keep_tmux_layer() -> None:
    """For a docker test about to build a tmux task (make_machine_task writes the task only:
    `unit` tests write them too). Builds TMUX_LAYER once per process (a second worker's build is a cache hit), the same
    way the backend builds a task (the engine's classic builder), so their layers are shared."""
    global _tmux_layer_kept
    if _tmux_layer_kept:
        return
    import fcntl
    import io
    import tempfile

    import docker

    from swe_residual.environments.docker.base_image import ensure_base_image

    ensure_base_image(progress=lambda _line: None)
    client = docker.from_env()
    # One build at a time across xdist workers: two at once would each tag an image, and the
    # first one's would be left untagged (dangling).
    lock_path = Path(tempfile.gettempdir()) / "swe-residual-test-tmux-layer.lock"
    try:
        with lock_path.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not client.api.images(name=TMUX_LAYER, quiet=True):
                dockerfile = io.BytesIO((MACHINE_TASK_HEAD + TMUX_INSTALL).encode())
                for chunk in client.api.build(fileobj=dockerfile, tag=TMUX_LAYER, rm=True, forcerm=True,
                                              labels={"swe-residual.test": "tmux-layer"}, decode=True):
                    if "error" in chunk:
                        raise RuntimeError(f"building {TMUX_LAYER} failed: {chunk['error']}")
    finally:
        client.close()
    _tmux_layer_kept = True


def make_machine_task(root: Path, task_id: str, commands: list[dict] | None, *, tmux: bool) -> Path:
    """A machine-track task (FROM the base image, tmux installed when `tmux`) whose verifier
    fails unless the reference solution ran (it leaves /app/solved); with `commands`, one state
    `terminus-1` of those interactions."""
    task = root / task_id
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(
        f"{MACHINE_TASK_HEAD}{TMUX_INSTALL if tmux else ''}RUN mkdir -p /app\nWORKDIR /app\n")
    (task / "task.toml").write_text(textwrap.dedent(f"""\
        schema_version = "1.3"
        [task]
        name = "test/{task_id}"
        [metadata]
        track = "machine"
        workdir = "/app"
        [verifier]
        environment_mode = "shared"
        timeout_sec = 60.0
        [agent]
        timeout_sec = 60.0
        [environment]
        network_mode = "no-network"
        cpus = 1
        memory_mb = 512
        """))
    (task / "instruction.md").write_text("Keep the ticker running.\n")
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "if [ -e /app/solved ]; then echo 1 > /logs/verifier/reward.txt; failure=; "
        "else echo 0 > /logs/verifier/reward.txt; failure='<failure/>'; fi\n"
        "echo \"<testsuites><testsuite name='t'><testcase classname='t' name='test_solved'>$failure"
        "</testcase></testsuite></testsuites>\" > /logs/verifier/junit.xml\n")
    (task / "tests" / "test.sh").chmod(0o755)
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ntouch /app/solved\n")
    if commands is None:
        return task
    state = task / "residual" / "terminus-1"
    state.mkdir(parents=True)
    (state / "state.toml").write_text('schema = 1\ntrack = "machine"\npredecessor = "terminus"\n'
                                      'source_run = "test"\ncommands = "commands.jsonl"\n')
    (state / "commands.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in commands))
    return task
