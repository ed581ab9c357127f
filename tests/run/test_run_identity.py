"""Agents that keep their names and configurations, run directories that keep theirs, and one
writer per run directory (issue 23), through the real plugin in subprocesses.

- Two models are two agents: mini-swe-agent's record names its model, and two runs of two
  models merged by `swe-residual report` are two rows.
- One agent name with two configurations (here two step limits) is an error naming both
  hashes and where each came from, in a merge and in the summary of one results file.
- An agent's program is part of its configuration, by content: two scripts at one path
  (`cmd:`), or two versions of a module (`module:`), are two configurations whose merge is
  refused; the same bytes give the same hash.
- `--resume=DIR` alone reuses the run's configuration (run.json); a changed one is refused.
- A second run on a run directory in use (same --run-id, or a second --resume) stops at once,
  naming the process that holds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_plugin import records, run, suite  # noqa: F401  (the `suite` fixture)

from swe_residual.cli.main import main as cli_main
from swe_residual.trial.records import append_record, read_record

pytestmark = pytest.mark.slow

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def _scripted_model(suite: pytest.Pytester, model: str, *extra: str) -> list[str]:
    """mini-swe-agent with its scripted model class under the name `model` (no network)."""
    (suite.path / "s.json").write_text(json.dumps([SUBMIT]))
    return ["--agent=mini-swe-agent", f"--model={model}", "--agent-option=model_class=deterministic",
            "--agent-option=script=s.json", "-m", "clean", *extra]


def test_two_models_are_two_agents_in_records_and_merged_reports(suite: pytest.Pytester, tmp_path: Path) -> None:
    for model in ("vendor/model-a", "vendor/model-b"):
        result = run(suite, *_scripted_model(suite, model), f"--run-id={model.split('-')[-1]}")
        assert result.ret == 0, result.stdout.str()
    a, b = records(suite.path / "out" / "a"), records(suite.path / "out" / "b")
    assert {r["agent"] for r in a} == {"mini-swe-agent[vendor/model-a]"}
    assert {r["agent"] for r in b} == {"mini-swe-agent[vendor/model-b]"}
    assert a[0]["agent_config"]["hash"] != b[0]["agent_config"]["hash"]
    assert cli_main(["report", str(suite.path / "out" / "a"), str(suite.path / "out" / "b"),
                     "--out", str(tmp_path / "merged")]) == 0
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert sorted(summary["agents"]) == ["mini-swe-agent[vendor/model-a]", "mini-swe-agent[vendor/model-b]"]


def test_agent_name_labels_each_agent_and_must_pair_with_the_agents(suite: pytest.Pytester) -> None:
    result = run(suite, "--agent=noop", "--agent=oracle", "--agent-name=baseline", "--agent-name=reference",
                 "-m", "clean", "--run-id=named")
    assert result.ret == 0, result.stdout.str()
    assert {r["agent"] for r in records(suite.path / "out" / "named")} == {"baseline", "reference"}
    assert {r["agent_config"]["spec"] for r in records(suite.path / "out" / "named")} == {"noop", "oracle"}
    one_short = run(suite, "--agent=noop", "--agent=oracle", "--agent-name=baseline")
    assert one_short.ret == pytest.ExitCode.USAGE_ERROR
    one_short.stderr.fnmatch_lines(["*1 label(s) from the command line --agent-name for 2 agent(s)*"])


def test_one_agent_name_with_two_configurations_is_an_error_naming_both(suite: pytest.Pytester,
                                                                         tmp_path: Path) -> None:
    for steps in ("5", "6"):
        result = run(suite, "--agent=noop", f"--max-steps={steps}", "-m", "clean", f"--run-id=steps{steps}")
        assert result.ret == 0, result.stdout.str()
    five, six = records(suite.path / "out" / "steps5"), records(suite.path / "out" / "steps6")
    hash5, hash6 = five[0]["agent_config"]["hash"], six[0]["agent_config"]["hash"]
    assert hash5 != hash6 and {r["agent_config"]["hash"] for r in five} == {hash5}
    merged = subprocess.run(
        [sys.executable, "-m", "swe_residual.cli.main", "report", "out/steps5", "out/steps6", "--out", str(tmp_path / "m")],
        cwd=suite.path, capture_output=True, text=True, check=False,
    )
    assert merged.returncode == 2, merged.stdout + merged.stderr
    assert "agent 'noop' has two configurations" in merged.stderr
    assert f"{hash5} (from out/steps5/results.jsonl:1, run steps5)" in merged.stderr
    assert f"{hash6} (from out/steps6/results.jsonl:1, run steps6)" in merged.stderr
    assert not (tmp_path / "m" / "summary.json").exists()  # no silent overwrite of one by the other
    # One results file holding both (concatenated by hand): the same error, and no summary.
    joined = suite.path / "out" / "joined" / "results.jsonl"
    for record in five[:1] + six[:1]:
        append_record(joined, read_record(record))
    assert cli_main(["report", str(joined), "--out", str(tmp_path / "j")]) == 2


def _merge(suite: pytest.Pytester, out: Path, *run_ids: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "swe_residual.cli.main", "report", *(f"out/{r}" for r in run_ids), "--out", str(out)],
        cwd=suite.path, capture_output=True, text=True, check=False,
    )


AGENT_V1 = "#!/bin/sh\necho first version\n"
AGENT_V2 = "#!/bin/sh\necho second version\n"


def test_two_programs_at_one_path_are_two_configurations(suite: pytest.Pytester, tmp_path: Path) -> None:
    script = suite.path / "agent.sh"
    hashes: dict[str, str] = {}
    for run_id, text in (("v1", AGENT_V1), ("v2", AGENT_V2), ("v1again", AGENT_V1)):
        script.write_text(text)
        script.chmod(0o755)
        result = run(suite, "--agent=cmd:./agent.sh", "-m", "clean", "-k", "alpha", f"--run-id={run_id}")
        assert result.ret == 0, result.stdout.str()
        (record,) = records(suite.path / "out" / run_id)
        assert record["agent"] == "cmd:./agent.sh"
        assert record["agent_config"]["files"] == {"agent.sh": hashlib.sha256(text.encode()).hexdigest()}
        hashes[run_id] = record["agent_config"]["hash"]
    assert hashes["v1"] != hashes["v2"] and hashes["v1"] == hashes["v1again"]
    refused = _merge(suite, tmp_path / "m", "v1", "v2")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "agent 'cmd:./agent.sh' has two configurations" in refused.stderr
    assert hashes["v1"] in refused.stderr and hashes["v2"] in refused.stderr
    assert not (tmp_path / "m" / "summary.json").exists()
    same = _merge(suite, tmp_path / "same", "v1", "v1again")
    assert same.returncode == 0, same.stdout + same.stderr
    assert json.loads((tmp_path / "same" / "summary.json").read_text())["agents"].keys() == {"cmd:./agent.sh"}


MODULE_AGENT = """from swe_residual.agents.base import SUBMITTED, AgentResult


class Agent:
    name = "identity-agent"

    def run(self, session):
        session.exec("echo {word}")
        return AgentResult(SUBMITTED)
"""


def test_two_versions_of_a_module_agent_are_two_configurations(suite: pytest.Pytester, tmp_path: Path) -> None:
    for run_id, word in (("m1", "one"), ("m2", "two")):
        (suite.path / "identity_agent.py").write_text(MODULE_AGENT.format(word=word))
        result = run(suite, "--agent=module:identity_agent:Agent", "-m", "clean", "-k", "alpha", f"--run-id={run_id}")
        assert result.ret == 0, result.stdout.str()
    (one,), (two,) = records(suite.path / "out" / "m1"), records(suite.path / "out" / "m2")
    digest = hashlib.sha256(MODULE_AGENT.format(word="two").encode()).hexdigest()
    assert two["agent_config"]["files"] == {"identity_agent.py": digest}
    assert one["agent_config"]["hash"] != two["agent_config"]["hash"]
    refused = _merge(suite, tmp_path / "m", "m1", "m2")
    assert refused.returncode == 2 and "has two configurations" in refused.stderr, refused.stderr


def test_resume_alone_reuses_the_run_configuration(suite: pytest.Pytester) -> None:
    first = run(suite, "--agent=oracle", "--agent-name=ref", "--max-steps=7", "-m", "clean", "--run-id=r")
    assert first.ret == 0, first.stdout.str()
    run_dir = suite.path / "out" / "r"
    stored = json.loads((run_dir / "run.json").read_text())
    assert stored["settings"]["agents"] == ["oracle"] and stored["settings"]["max_steps"] == 7
    assert stored["agents"] == [{"spec": "oracle", "name": "ref"}]
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    (run_dir / "results.jsonl").write_text("\n".join(lines[:1]) + "\n")  # two items left to run
    resumed = suite.runpytest_subprocess("residual_tests", "-p", "no:cacheprovider", "-m", "clean", "--resume=out/r")
    assert resumed.ret == 0, resumed.stdout.str()
    resumed.stdout.fnmatch_lines(["*2 selected*"])
    after = records(run_dir)
    assert len(after) == 3 and {r["agent"] for r in after} == {"ref"}
    assert {r["budget"]["max_steps"] for r in after} == {7}
    assert len({r["agent_config"]["hash"] for r in after}) == 1


def test_resume_with_a_changed_configuration_is_refused_saying_what_changed(suite: pytest.Pytester) -> None:
    assert run(suite, "--agent=noop", "-m", "clean", "--run-id=c", "--max-steps=3").ret == 0
    before = (suite.path / "out" / "c" / "results.jsonl").read_text()
    changed = run(suite, "--agent=noop", "--max-steps=4", "--resume=out/c")
    assert changed.ret == pytest.ExitCode.USAGE_ERROR
    changed.stderr.fnmatch_lines(["*--resume=*the run was configured otherwise*",
                                  "*--max-steps: the run has 3, this invocation 4*"])
    other_agent = run(suite, "--agent=oracle", "--resume=out/c")
    assert other_agent.ret == pytest.ExitCode.USAGE_ERROR
    other_agent.stderr.fnmatch_lines(['*--agent: the run has ?"noop"?, this invocation ?"oracle"?*'])
    # A new run on the same --run-id with other settings is refused the same way.
    again = run(suite, "--agent=noop", "--run-id=c")
    again.stderr.fnmatch_lines(["*holds a run configured otherwise*", "*--max-steps: the run has 3, this invocation null*"])
    assert (suite.path / "out" / "c" / "results.jsonl").read_text() == before  # nothing written by the refused runs


def _start_hanging_run(suite: pytest.Pytester, hang_dir: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "HANG_DIR": str(hang_dir), "HANG_AFTER": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "residual_tests", "--dataset=data", "--backend=local", "--results-dir=out",
         "-p", "no:cacheprovider", "--agent=module:scripted_agents:HangsAfter", *args],
        cwd=suite.path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )


def _wait_for_lines(path: Path, count: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not path.exists() or len(path.read_text().splitlines()) < count):
        assert process.poll() is None, "the first run ended early"
        time.sleep(0.2)
    assert path.exists() and len(path.read_text().splitlines()) >= count


def test_a_second_run_or_resume_of_a_run_directory_in_use_is_refused(suite: pytest.Pytester, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANG_DIR", str(tmp_path))  # the agent counts its runs there; hangs only in the first run
    first = _start_hanging_run(suite, tmp_path, "--run-id=busy")
    try:
        results = suite.path / "out" / "busy" / "results.jsonl"
        _wait_for_lines(results, 1, first)  # one item recorded, the second hanging in its agent
        started = time.monotonic()
        second = run(suite, "--agent=module:scripted_agents:HangsAfter", "--run-id=busy")
        assert second.ret == pytest.ExitCode.USAGE_ERROR, second.stdout.str()
        assert time.monotonic() - started < 60  # at once, not after waiting for the first
        second.stderr.fnmatch_lines([f"*out/busy is in use by another run (pid {first.pid} on host *"])
        resumed = run(suite, "--agent=module:scripted_agents:HangsAfter", "--resume=out/busy")
        assert resumed.ret == pytest.ExitCode.USAGE_ERROR
        resumed.stderr.fnmatch_lines([f"*in use by another run (pid {first.pid} *"])
        assert len(results.read_text().splitlines()) == 1  # the refused runs appended nothing
    finally:
        os.killpg(first.pid, 9)
        first.wait()
    # The killed holder left its lock file, but the kernel dropped the lock: a resume takes it.
    (tmp_path / "runs").unlink()
    env_resume = run(suite, "--resume=out/busy")
    assert env_resume.ret == 0, env_resume.stdout.str()
    assert len(records(suite.path / "out" / "busy")) == 6
