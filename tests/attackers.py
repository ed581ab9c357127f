"""Attackers that try to turn their failure into an exclusion or a pass (issue 23), as `cmd:`
agent commands, and the tasks they attack (tests/test_attribution_*.py).

Each command runs in the agent's environment as any `cmd:` agent does and never fixes the task:
its item must end a failure, never an exclusion (infra_error) nor a success.
"""

from __future__ import annotations

import shlex
import textwrap
from pathlib import Path

from taskfactory import TEST_SH, make_task

# test.sh as real tasks write it: a plain `python3 -m pytest`, without the isolated mode (-I)
# the factory's own verifier uses, so what Python finds in HOME would load before pytest.
PLAIN_TEST_SH = TEST_SH.replace("python3 -I -B -m pytest", "python3 -m pytest")
assert PLAIN_TEST_SH != TEST_SH

FAKE_GIT = "printf '#!/bin/sh\\necho fake git >&2\\nexit 1\\n'"

# Replaces the container's git, puts a fake one first on the PATH and corrupts the repository.
BREAK_GIT = (
    f"{FAKE_GIT} > /usr/local/bin/git && chmod +x /usr/local/bin/git && cp /usr/local/bin/git /usr/bin/git"
    " && echo garbage > .git/HEAD && rm -rf .git/objects .git/index"
)
# On the local backend the host's git is the harness's too: only the repository is corrupted.
CORRUPT_GIT = "echo garbage > .git/HEAD && rm -rf .git/objects .git/index"

# Fills the container's pids limit and keeps it full: every process forks again whenever a
# process slot frees up, detached from the agent's command (which returns at once).
FORK_TO_THE_LIMIT = "python3 -c " + shlex.quote(textwrap.dedent(
    """\
    import os, time
    def child():
        os.setsid()
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        while True:
            try:
                if os.fork() == 0:
                    continue
            except OSError:
                pass
            time.sleep(0.2)
    for _ in range(5000):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            child()
    """
))

# An import-time infinite loop in the module under test: the hidden tests hang on import.
HANG_ON_IMPORT = "sed -i '1i import time\\nwhile True:\\n    time.sleep(1)' calc.py"

# A user-site .pth whose import line ends Python at once with status 0: a plain `python3 -m
# pytest` "passes" before any test runs (reward 1 without a fix) unless the user site is off.
USER_SITE_PTH = (
    'site=$(python3 -c "import site; print(site.getusersitepackages())") && mkdir -p "$site"'
    ' && echo "import os; os._exit(0)" > "$site/zz-pass.pth"'
)

# Machine track: a loop left running rewrites the hidden tests into a passing one as soon as
# they are copied in (and again whenever they are copied in again).
REWRITE_SCRIPT = (
    'while :; do for f in /tests/test_*.py; do '
    '[ -f "$f" ] && ! grep -q PWNED "$f" && printf "def test_pwned():\\n    pass  # PWNED\\n" > "$f"; '
    'done; sleep 0.02; done'
)
REWRITE_LOOP = f"setsid nohup sh -c {shlex.quote(REWRITE_SCRIPT)} >/dev/null 2>&1 < /dev/null &"


def as_service(script: str, port: int) -> str:
    """A detached shell `script` under a Python process holding a listening socket on loopback:
    the machine track keeps such a process and its children running as a service through
    verification (issue 48 freezes every other leftover), so the defences behind the freeze are met."""
    return "setsid nohup python3 -c " + shlex.quote(
        "import socket, subprocess\n"
        f"s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen()\n"
        f"subprocess.call(['sh', '-c', {script!r}])\n"
    ) + " >/dev/null 2>&1 < /dev/null & sleep 1"  # listening before the agent's command returns

# Signals to the container's PID 1 (issue 33): with the engine's init each of the first two
# stopped the container (a lost container: infrastructure, retried, excluded).
KILL_INIT = {"term": "kill -TERM 1", "kill-all": "kill -9 -1", "kill": "kill -KILL 1", "stop": "kill -STOP 1"}

# The fix of the factory's task from its clean start and from its Residual State alike (the
# predecessor left `return max(low, value)`).
SOLVE_CLAMP = "sed -i -E 's/^    return (value|max\\(low, value\\))$/    return max(low, min(value, high))/' calc.py"

# Machine task: the request is to leave /srv/done holding "ok".
MACHINE_FIX = "mkdir -p /srv && echo ok > /srv/done"


def attack_task(root: Path, task_id: str, *, environment_mode: str = "shared", **options: object) -> Path:
    """The factory's repo task (no residual state unless `states` says) with a plain test.sh and a
    short verifier timeout."""
    options.setdefault("states", {})
    options.setdefault("verifier_timeout_sec", 15.0)
    options.setdefault("test_sh", PLAIN_TEST_SH)
    return make_task(root, task_id, environment_mode=environment_mode, **options)  # type: ignore[arg-type]


def machine_task(root: Path, task_id: str) -> Path:
    """A machine-track task verified in the agent's container: /srv/done must hold "ok"."""
    task = root / task_id
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(
        "ARG BASE_IMAGE=swe-residual-base:bookworm\nFROM ${BASE_IMAGE}\nWORKDIR /root\n")
    (task / "task.toml").write_text(textwrap.dedent(
        f"""\
        schema_version = "1.3"
        [task]
        name = "test/{task_id}"
        [metadata]
        track = "machine"
        workdir = "/root"
        [verifier]
        environment_mode = "shared"
        timeout_sec = 30.0
        [agent]
        timeout_sec = 60.0
        [environment]
        network_mode = "no-network"
        cpus = 1
        memory_mb = 512
        """
    ))
    (task / "instruction.md").write_text("Leave the file /srv/done holding the line `ok`.\n")
    tests = task / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text(textwrap.dedent(
        """\
        #!/bin/bash
        LOGS_DIR="${VERIFIER_LOGS_DIR:-/logs/verifier}"
        mkdir -p "$LOGS_DIR"
        cd "${TESTS_DIR:-/tests}" || { echo -1 > "$LOGS_DIR/reward.txt"; exit 1; }
        python3 -m pytest -p no:cacheprovider -q . --junitxml="$LOGS_DIR/junit.xml"
        case "$?" in 0) echo 1 > "$LOGS_DIR/reward.txt" ;; 1) echo 0 > "$LOGS_DIR/reward.txt" ;;
          *) echo -1 > "$LOGS_DIR/reward.txt" ;; esac
        """
    ))
    (tests / "test_done.py").write_text(
        "from pathlib import Path\n\n\ndef test_done():\n    assert Path('/srv/done').read_text() == 'ok\\n'\n")
    solution = task / "solution"
    solution.mkdir()
    (solution / "solve.sh").write_text(f"#!/bin/bash\n{MACHINE_FIX}\n")
    return task
