"""Exec, files and engine errors of the docker backend on a real engine (issue 16).

The task runs in the Debian base image as it is (`[environment] docker_image`), so no task
image is built. A command printing 200 MB must cost the harness a few MiB: output is kept
with a cap (head + tail) while it streams.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse

from swe_residual.dataset.task import Task, load_task
from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker import (
    LABEL,
    OUTPUT_HEAD_BYTES,
    OUTPUT_TAIL_BYTES,
    CappedOutput,
    DockerBackend,
    DockerEnvironment,
)
from swe_residual.environments.docker.base_image import BASE_IMAGE, ensure_base_image
from swe_residual.environments.docker.harness_tools import leftover_processes
from swe_residual.dataset.errors import EnvironmentLostByAgent, InfraError

ROOT = Path(__file__).resolve().parents[2]


# -- the cap, without an engine ----------------------------------------------------------------
def test_capped_output_keeps_head_and_tail_and_counts_the_rest() -> None:
    capped = CappedOutput(head=4, tail=3)
    for chunk in (b"ab", b"cdef", b"ghij", b"klm"):
        capped.add(chunk)
    assert capped.dropped == 13 - 4 - 3
    assert capped.value() == b"abcd\n[... 6 bytes of output dropped ...]\nklm"
    small = CappedOutput(head=4, tail=3)
    small.add(b"abcdefg")
    assert (small.dropped, small.value()) == (0, b"abcdefg")
    whole = CappedOutput(head=None)
    whole.add(b"x" * 10_000)
    assert (whole.dropped, whole.value()) == (0, b"x" * 10_000)


def test_an_unreachable_engine_is_an_infra_error(tmp_path: Path) -> None:
    url = f"unix://{tmp_path}/no-engine.sock"
    assert DockerBackend.available(engine_url=url) is False
    with pytest.raises(InfraError, match="cannot be reached"):
        DockerBackend(engine_url=url, cache_dir=tmp_path)


# -- on the engine -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    ensure_base_image(progress=lambda line: None)
    root = tmp_path_factory.mktemp("exec-task") / "plain"
    (root / "tests").mkdir(parents=True)
    (root / "solution").mkdir()
    (root / "task.toml").write_text(textwrap.dedent(f'''\
        schema_version = "1.1"
        [metadata]
        track = "machine"
        workdir = "/app"  # the base image sets no WORKDIR of its own
        [environment]
        docker_image = "{BASE_IMAGE}"
        network_mode = "no-network"
    '''))
    (root / "instruction.md").write_text("Nothing to do.\n")
    (root / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > \"$VERIFIER_LOGS_DIR/reward.txt\"\n")
    (root / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    return load_task(root)


@pytest.fixture
def env(task: Task, tmp_path: Path) -> Iterator[DockerEnvironment]:
    with DockerBackend(cache_dir=tmp_path, progress=lambda line: None) as backend:
        environment = backend.start(task, None, StartSpec("exec-test", "exec", 1))
        with environment:
            yield environment
        assert backend.client.api.containers(all=True, filters={"label": f"{LABEL}.backend={backend.token}"}) == []


pytestmark = requires_docker


MEASURE = '''
import json, sys, time
from pathlib import Path
from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker import DockerBackend
from swe_residual.dataset.task import load_task


def rss_kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise SystemExit(f"no {field} in /proc/self/status")


with DockerBackend(cache_dir=Path(sys.argv[2]), progress=lambda line: None) as backend:
    env = backend.start(load_task(Path(sys.argv[1])), None, StartSpec("exec-test", "memory", 1))
    env.exec("true")  # warm: the client, its connection pool, the decoders
    before = rss_kib("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current size
    except OSError:
        pass  # then the peak since the start counts: a stricter measure
    started = time.monotonic()
    # 200 MB on stdout (lines of 1 KiB), then a last line the tail must hold; a little stderr.
    result = env.exec("echo first-line; yes $(head -c 1023 /dev/zero | tr '\\\\0' x) | head -c 200000000; "
                      "echo; echo last-line; echo on-stderr >&2", timeout_sec=300)
    elapsed = time.monotonic() - started
    after = rss_kib("VmHWM")
    env.close()
print(json.dumps({"growth_kib": after - before, "before_kib": before, "seconds": elapsed, "exit_code": result.exit_code,
                  "dropped": result.dropped_bytes, "stdout_len": len(result.stdout),
                  "head": result.stdout[:11], "tail": result.stdout[-10:], "stderr": result.stderr,
                  "marker": f"[... {result.dropped_bytes} bytes of output dropped ...]" in result.stdout}))
'''


@pytest.mark.slow
def test_200_mb_of_output_costs_the_harness_a_few_mib(task: Task, tmp_path: Path) -> None:
    # In a fresh process: the peak RSS of this pytest process says nothing about one exec.
    done = subprocess.run([sys.executable, "-c", MEASURE, str(task.path), str(tmp_path)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"200 MB exec: peak RSS growth {measured['growth_kib'] / 1024:.1f} MiB over "
          f"{measured['before_kib'] / 1024:.1f} MiB, in {measured['seconds']:.1f}s")
    assert measured["exit_code"] == 0
    assert measured["growth_kib"] < 100 * 1024, measured
    assert measured["head"] == "first-line\n" and measured["tail"] == "last-line\n"
    assert measured["stderr"] == "on-stderr\n"
    assert measured["marker"]
    total = len("first-line\n") + 200_000_000 + len("\nlast-line\n")
    assert measured["dropped"] == total - OUTPUT_HEAD_BYTES - OUTPUT_TAIL_BYTES
    assert measured["stdout_len"] < OUTPUT_HEAD_BYTES + OUTPUT_TAIL_BYTES + 100


def test_exec_in_a_container_removed_behind_the_backend_is_an_infra_error(env: DockerEnvironment) -> None:
    env.client.api.remove_container(env.container_id, force=True)
    with pytest.raises(InfraError, match="lost") as raised:
        env.exec("true")
    assert type(raised.value) is InfraError and "removed from outside" in str(raised.value)
    with pytest.raises(InfraError, match="lost"):
        env.write_file("x.txt", b"x")
    with pytest.raises(InfraError, match="lost"):
        env.copy_out("/etc/hostname")


def _running(env: DockerEnvironment) -> bool:
    return bool(env.client.api.inspect_container(env.container_id)["State"]["Running"])


# Before issue 33 each of these stopped the container (docker-init forwards SIGTERM and exits
# when its child dies): the agent's failure became an infrastructure error.
@pytest.mark.parametrize("attack", ["kill -TERM 1", "kill -9 -1", "kill -KILL 1", "kill -STOP 1", "kill -INT 1",
                                    "kill -HUP 1", "kill -SEGV 1", "kill -15 -1"])
def test_nothing_inside_the_container_can_stop_its_pid_1(env: DockerEnvironment, attack: str) -> None:
    env.exec(f"{attack}; sleep 0.3", timeout_sec=30)  # `kill -9 -1` ends the exec's own `timeout` too
    assert _running(env)
    state = env.exec("sleep 0.5; ps -o stat= -p 1; ps -eo ppid=,args=", timeout_sec=30)
    assert state.exit_code == 0 and not state.stdout.startswith("T"), state.output  # never stopped
    assert "1 sleep 2147483647" in " ".join(state.stdout.split()), state.stdout  # the idle child is back
    assert leftover_processes(env.client, env.container_id) == []  # and recognized as the container's own


def test_orphans_are_reaped(env: DockerEnvironment) -> None:
    # Children orphaned to PID 1 that end: none may stay a zombie (<defunct>).
    env.exec("for i in 1 2 3 4 5; do (sleep 0.2 &); setsid sh -c 'sleep 0.1 & exit 0'; done; sleep 1.5",
             timeout_sec=30)
    listing = env.exec("ps -eo stat=,pid=,ppid=,args=", timeout_sec=30).stdout
    assert "defunct" not in listing and not any(line.split()[0].startswith("Z") for line in listing.splitlines()), listing


def test_a_process_left_behind_is_not_mistaken_for_the_idle_one(env: DockerEnvironment) -> None:
    # The same command line as the idle sleep, orphaned to PID 1: still a process of the agent's.
    env.exec("setsid sleep 2147483647 > /dev/null 2>&1 < /dev/null & sleep 0.5", timeout_sec=30)
    assert leftover_processes(env.client, env.container_id) == ["sleep 2147483647"]
    assert env.stop_processes() == 1 and leftover_processes(env.client, env.container_id) == []


def test_a_container_killed_from_the_host_is_infrastructure_with_the_engines_evidence(env: DockerEnvironment) -> None:
    env.client.api.kill(env.container_id)  # a host `docker kill`: the engine records a kill event
    with pytest.raises(InfraError) as raised:
        env.exec("true", timeout_sec=30)
    assert type(raised.value) is InfraError, raised.value  # never the agent's
    assert "is lost (not running): engine event: kill (signal 9) at " in str(raised.value)
    assert "exit code 137" in str(raised.value)


def test_init_ended_with_no_cause_from_outside_is_lost_by_what_ran_inside(env: DockerEnvironment) -> None:
    # What an agent could do if anything inside could end PID 1. Caused from the host here
    # (the engine shares this host's processes): a signal the engine never sees, so no event.
    pid = env.client.api.inspect_container(env.container_id)["State"]["Pid"]
    # The same process as the container's init. On a busy host, right after the start, its
    # cmdline can still read empty or `runc init` (the runtime before it execs the init; both
    # seen in loaded full runs): read it again, briefly.
    deadline = time.monotonic() + 10
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    while cmdline.split(b"\0")[:2] != [b"sh", b"-c"] and time.monotonic() < deadline:
        time.sleep(0.2)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    assert cmdline.split(b"\0")[:2] == [b"sh", b"-c"]
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(EnvironmentLostByAgent, match="no cause from outside it") as raised:
        env.exec("true", timeout_sec=30)
    assert "exit code 137" in str(raised.value)
    with pytest.raises(EnvironmentLostByAgent):  # the harness's own steps say the same
        env.stop_processes()


def test_a_container_killed_during_a_command_is_lost(env: DockerEnvironment) -> None:
    client = docker.from_env()
    try:
        killer = subprocess.Popen([sys.executable, "-c", (
            "import docker, sys, time; time.sleep(1); docker.from_env().api.kill(sys.argv[1])"), env.container_id])
        with pytest.raises(InfraError, match="lost") as raised:
            env.exec("sleep 60", timeout_sec=30)
        assert "engine event: kill (signal 9)" in str(raised.value) and type(raised.value) is InfraError
        killer.wait(timeout=30)
    finally:
        client.close()


def test_files_through_archives_and_the_scratch_tmpfs(env: DockerEnvironment, tmp_path: Path) -> None:
    data = bytes(range(256)) * 1000
    env.write_file("deep/dir/blob.bin", data)
    assert env.read_file("/app/deep/dir/blob.bin") == data
    # An existing file keeps its mode; a symlink is followed as `cat` would.
    env.exec("printf '#!/bin/sh\\necho old\\n' > run.sh && chmod 755 run.sh && ln -s run.sh link.sh")
    env.write_file("link.sh", b"#!/bin/sh\necho new\n")
    assert env.exec("./run.sh").stdout == "new\n"
    assert env.exec("stat -c %a run.sh && test -L link.sh").stdout == "755\n"
    with pytest.raises(IsADirectoryError):
        env.read_file("deep")
    with pytest.raises(IsADirectoryError):
        env.write_file("deep", b"x")
    with pytest.raises(FileNotFoundError):
        env.read_file("missing.txt")
    # The scratch directory is a tmpfs, which the archive API cannot see: exec transfers.
    env.write_file(f"{env.scratch_dir}/sub/x.bin", data)
    assert env.exec(f"cmp -s {env.scratch_dir}/sub/x.bin /app/deep/dir/blob.bin").exit_code == 0
    assert env.read_file(f"{env.scratch_dir}/sub/x.bin") == data
    with pytest.raises(FileNotFoundError):
        env.read_file(f"{env.scratch_dir}/missing")
    assert env.read_file("/proc/self/cmdline").startswith(b"cat")


def test_copy_in_and_copy_out(env: DockerEnvironment, tmp_path: Path) -> None:
    source = tmp_path / "tree"
    (source / "a" / "b").mkdir(parents=True)
    (source / "top.txt").write_text("top\n")
    (source / "a" / "b" / "deep.txt").write_text("deep\n")
    env.copy_in(source, "/opt/copied")
    env.copy_in({"x/y.txt": b"y"}, "/opt/copied")
    assert env.copy_out("/opt/copied") == {"top.txt": b"top\n", "a/b/deep.txt": b"deep\n", "x/y.txt": b"y"}
    assert env.copy_out("/opt/copied/top.txt") == {"top.txt": b"top\n"}
    assert env.copy_out("/opt/nothing") == {}
    env.exec("head -c 2048 /dev/zero > /opt/copied/big.bin")
    assert "big.bin" not in env.copy_out("/opt/copied", max_file_bytes=1024)
    env.copy_in(source, f"{env.scratch_dir}/tree")
    assert env.copy_out(f"{env.scratch_dir}/tree")["a/b/deep.txt"] == b"deep\n"
    env.remove_paths("/opt/copied")
    assert env.copy_out("/opt/copied") == {}


def test_missing_cwd_is_the_callers_error(env: DockerEnvironment) -> None:
    with pytest.raises(FileNotFoundError):
        env.exec("true", cwd="/no/such/dir")
    assert env.exec("echo fine").stdout == "fine\n"


@pytest.mark.slow
def test_a_failed_build_leaves_no_image_it_made(tmp_path: Path) -> None:
    import re
    import secrets

    context = tmp_path / "context"
    context.mkdir()
    (context / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN echo {secrets.token_hex(8)} > /made\nRUN exit 3\n")
    with DockerBackend(cache_dir=tmp_path, progress=lambda line: None) as backend:
        with pytest.raises(InfraError, match="building") as failure:
            backend.build_image(context, context / "Dockerfile", repo="swe-residual-task", name="failing", timeout_sec=300)
        base_id = backend.client.api.inspect_image(BASE_IMAGE)["Id"].split(":")[1][:12]
        steps = set(re.findall(r"^ ---> ([0-9a-f]{12})$", str(failure.value), re.MULTILINE)) - {base_id}
        assert steps, str(failure.value)  # the first RUN made an image...
        for step in steps:  # ...which is gone with the failure
            with pytest.raises(docker.errors.ImageNotFound):
                backend.client.api.inspect_image(step)
