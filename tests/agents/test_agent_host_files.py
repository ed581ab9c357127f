"""`cmd:` agents that name host files: found where pytest runs, copied into the environment.

Pure rewriting rules first, then the real thing on the local backend, through pytest itself as
a user runs `--agent=cmd:./my-agent.sh` (the docker backend: test_agent_environment_docker.py).
"""

from __future__ import annotations

import io
import json
import stat
import tarfile
from pathlib import Path

import pytest
from suitecheckout import make_checkout
from scripted_agents import FIX_CLAMP
from taskfactory import make_task

from swe_residual.agents import AgentSession, Budget, resolve_agent
from swe_residual.agents.host_files import host_program
from swe_residual.dataset.errors import ConfigError
from swe_residual.dataset.task import load_task
from swe_residual.agents.trajectory import Trajectory

# Prints where it runs (hostname, working directory, its own path), then fixes the task.
FIX_AGENT = f"""#!/bin/bash
echo "host=$(hostname) pwd=$(pwd) self=$0 dockerenv=$(test -e /.dockerenv && echo yes || echo no)"
echo "helper says: $(cat "$(dirname "$0")/helper.txt" 2>/dev/null || echo none)"
{FIX_CLAMP}
"""


def write_agent(directory: Path, name: str = "fix-agent.sh", text: str = FIX_AGENT) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def archive_members(archive: bytes) -> dict[str, int]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {member.name: member.mode for member in tar.getmembers()}


# -- which words are host files ----------------------------------------------------------------
@pytest.mark.unit
def test_relative_host_file_is_rewritten_and_copied_read_only(tmp_path: Path) -> None:
    write_agent(tmp_path / "agents")
    program = host_program('./agents/fix-agent.sh --prompt "$SWE_RESIDUAL_INSTRUCTION_FILE"', str(tmp_path))
    assert program.command == '"$SWE_RESIDUAL_AGENT_DIR"/fix-agent.sh --prompt "$SWE_RESIDUAL_INSTRUCTION_FILE"'
    assert program.files == (str(tmp_path / "agents" / "fix-agent.sh"),)
    members = archive_members(program.archive or b"")
    assert list(members) == ["fix-agent.sh"]
    assert members["fix-agent.sh"] & 0o222 == 0 and members["fix-agent.sh"] & stat.S_IXUSR


@pytest.mark.unit
def test_words_that_are_not_host_files_stay_as_written(tmp_path: Path) -> None:
    for command in ("python3 -c 'print(1)'", "/usr/bin/env bash -c true", "my-cli --x a/b", "run.sh ./missing.txt",
                    "curl http://127.0.0.1/x", "scripts/solve.sh"):
        program = host_program(command, str(tmp_path))
        assert (program.command, program.archive) == (command, None), command


@pytest.mark.unit
@pytest.mark.parametrize("command", ["./missing-agent.sh", "X=1 ../missing-agent.sh --fast", "./agents"])
def test_a_missing_program_is_a_usage_error(tmp_path: Path, command: str) -> None:
    """`./x` as the program means a host file: missing, every item would fail as an agent error."""
    (tmp_path / "agents").mkdir()
    with pytest.raises(ConfigError, match=rf"--agent=cmd:{command}: \.+/\S+ (does not exist|is a directory)"):
        resolve_agent(f"cmd:{command}", base_dir=tmp_path)


@pytest.mark.unit
def test_absolute_host_file_and_interpreter_argument(tmp_path: Path) -> None:
    script = write_agent(tmp_path, "agent.py", "print('hi')\n")
    program = host_program(f"python3 {script} --fast", "/nonexistent")
    assert program.command == 'python3 "$SWE_RESIDUAL_AGENT_DIR"/agent.py --fast'


@pytest.mark.unit
def test_upload_dir_copies_the_directory_without_git(tmp_path: Path) -> None:
    write_agent(tmp_path / "agent")
    (tmp_path / "agent" / "helper.txt").write_text("from the directory\n")
    (tmp_path / "agent" / "lib").mkdir()
    (tmp_path / "agent" / "lib" / "util.sh").write_text("true\n")
    (tmp_path / "agent" / ".git").mkdir()
    (tmp_path / "agent" / ".git" / "HEAD").write_text("ref\n")
    program = host_program("agent/fix-agent.sh", str(tmp_path), "dir")
    assert program.command == '"$SWE_RESIDUAL_AGENT_DIR"/fix-agent.sh'
    names = set(archive_members(program.archive or b""))
    assert {"fix-agent.sh", "helper.txt", "lib", "lib/util.sh"} <= names
    assert not any(name.startswith(".git") for name in names)


@pytest.mark.unit
def test_bad_upload_and_name_clash_are_usage_errors(tmp_path: Path) -> None:
    write_agent(tmp_path / "a", "run.sh")
    write_agent(tmp_path / "b", "run.sh")
    with pytest.raises(ConfigError, match="upload"):
        host_program("a/run.sh", str(tmp_path), "tree")
    with pytest.raises(ConfigError, match="two host files named 'run.sh'"):
        host_program("a/run.sh && b/run.sh", str(tmp_path))


# -- the local backend, through pytest as a user runs it ---------------------------------------
@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    make_checkout(pytester.path, monkeypatch, tmp_path / "cache")
    make_task(pytester.path / "data", "alpha")
    return pytester


@pytest.mark.slow
def test_local_cmd_agent_from_the_checkout_runs_in_the_workspace(suite: pytest.Pytester) -> None:
    write_agent(suite.path)
    (suite.path / "helper.txt").write_text("copied with its directory\n")
    result = suite.runpytest_subprocess("residual_tests", "--dataset=data", "--backend=local", "--results-dir=out",
                                        "-p", "no:cacheprovider", "--agent=cmd:./fix-agent.sh",
                                        "--agent-option", "upload=dir")
    assert result.ret == 0, result.stdout.str()
    (run_dir,) = (suite.path / "out").iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    # The clean start is fixed by the script (the residual one's inherited edit defeats its sed).
    assert {r["start"]: r["outcome"] for r in records} == {"clean": "success", "residual": "failure"}
    for record in records:
        assert record["termination"] == "submitted"
        # It ran in the item's workspace (not where pytest runs), from the copy, with its directory.
        assert f"pwd={suite.path}" not in record["message"] and "/repo " in record["message"]
        assert "/scratch/agent/fix-agent.sh" in record["message"]
        assert "helper says: copied with its directory" in record["message"]
        assert "fix-agent" not in (record["final_patch"] or "") and "helper" not in (record["final_patch"] or "")
    clean = next(r for r in records if r["start"] == "clean")
    assert "max(low, min(value, high))" in clean["final_patch"]


def test_local_backend_refuses_agent_mounts_and_setup(suite: pytest.Pytester) -> None:
    (suite.path / "setup.sh").write_text("true\n")
    result = suite.runpytest_subprocess("residual_tests", "--dataset=data", "--backend=local", "--agent=noop",
                                        "-p", "no:cacheprovider", "--agent-setup=setup.sh")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--agent-setup need the docker backend*"])


def test_copy_is_gone_after_the_agent_on_local(tmp_path: Path, cache_dir: Path) -> None:
    from swe_residual.environments.base import StartSpec
    from swe_residual.environments.local import LocalBackend

    task = load_task(make_task(tmp_path / "data", "calc"))
    write_agent(tmp_path / "host")
    factory = resolve_agent("cmd:host/fix-agent.sh", base_dir=tmp_path)
    backend = LocalBackend()
    environment = backend.start(task, None, StartSpec("r", "i", 1))
    try:
        session = AgentSession(task.instruction, Budget(60), environment, Trajectory(agent="a"))
        factory().run(session)
        assert not Path(environment.scratch_dir, "agent").exists()
        assert (tmp_path / "host" / "fix-agent.sh").stat().st_mode & 0o200  # the host file untouched
    finally:
        environment.close()
