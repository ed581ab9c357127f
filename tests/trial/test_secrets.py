"""Model API keys reach agents by environment only and never reach a record (issue 6).

A fake key is set in the host environment; agents that echo it (mini-swe-agent's scripted
model, a `cmd:` agent given it with `--agent-option env=NAME`) run through the real plugin,
and no results, trajectory, summary or report file contains the value.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from suitecheckout import make_checkout
from taskfactory import make_task

from swe_residual.agents import resolve_agent
from swe_residual.dataset.load import load_dataset
from swe_residual.environments.local import LocalBackend
from swe_residual.agents.redaction import REDACTED, redact, secret_values
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

FAKE_KEY = "sk-fake-0123456789abcdef"
FAKE_TOKEN = "ghp_fakeTokenValue42"


def all_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(root.rglob("*")) if p.is_file())


@pytest.mark.unit
def test_secret_values_and_redaction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("GH_TOKEN", FAKE_TOKEN)
    monkeypatch.setenv("CUSTOM_CREDENTIAL", "passed-by-name-only")
    monkeypatch.setenv("SHORT_TOKEN", "1")  # too short to redact without mangling text
    secrets = secret_values()
    assert FAKE_KEY in secrets and FAKE_TOKEN in secrets and "1" not in secrets
    assert "passed-by-name-only" not in secrets
    assert "passed-by-name-only" in secret_values(["CUSTOM_CREDENTIAL"])
    record = {"message": f"key={FAKE_KEY}", "steps": [{"output": f"{FAKE_TOKEN}\n"}], "n": 3}
    assert redact(record, secrets) == {"message": f"key={REDACTED}", "steps": [{"output": f"{REDACTED}\n"}], "n": 3}


def test_keys_reach_a_cmd_agent_only_when_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    make_task(tmp_path / "data")
    entry = load_dataset(tmp_path / "data").entries[0]
    backend = LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)
    echo = 'cmd:echo "key=[${OPENAI_API_KEY:-unset}]"; test -n "$OPENAI_API_KEY"'
    unlisted = record_json(run_item(entry.task, None, resolve_agent(echo), backend, RunOptions(run_id="s", run_dir=tmp_path / "a")))
    assert unlisted["termination"] == "agent_error"  # not passed: the command saw no key
    options = RunOptions(run_id="s", run_dir=tmp_path / "b", agent_options=(("env", "OPENAI_API_KEY"),))
    listed = record_json(run_item(entry.task, None, resolve_agent(echo, dict(options.agent_options)), backend, options))
    assert listed["termination"] == "submitted"  # passed: the command saw it...
    assert f"key=[{REDACTED}]" in listed["message"]  # ...and the record does not
    assert FAKE_KEY not in json.dumps(listed) and FAKE_KEY not in all_text(tmp_path / "b")


def test_the_mini_swe_agent_model_layer_gets_keys_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its model layer reads keys from the process environment; commands never get them."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    make_task(tmp_path / "data")
    entry = load_dataset(tmp_path / "data").entries[0]
    backend = LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)
    script = tmp_path / "s.json"
    script.write_text(json.dumps(['echo "in-env=[${ANTHROPIC_API_KEY:-unset}]"', "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]))
    options = RunOptions(run_id="s", run_dir=tmp_path / "run")
    record = record_json(run_item(entry.task, None, resolve_agent("mini-swe-agent", {"script": str(script)}, "deterministic"),
                      backend, options))
    steps = json.loads((options.run_dir / record["trajectory"]).read_text())["steps"]
    assert steps[0]["output"] == "in-env=[unset]\n"
    assert os.environ["ANTHROPIC_API_KEY"] == FAKE_KEY  # still there for the model layer (litellm reads it)


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    make_checkout(pytester.path, monkeypatch, tmp_path / "cache")
    make_task(pytester.path / "data", "alpha")
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    return pytester


@pytest.mark.slow
def test_no_secret_in_any_file_of_a_run(suite: pytest.Pytester) -> None:
    # Echo the keys from every place an agent can: output, a file in the repository (the final
    # diff), its own trajectory file, its final message, and an agent option's value.
    leak = (
        'cmd:echo "$OPENAI_API_KEY $HF_TOKEN"; echo "$OPENAI_API_KEY" > leaked.txt; '
        'echo "{\\"command\\": \\"echo $HF_TOKEN\\", \\"output\\": \\"$OPENAI_API_KEY\\"}" > "$SWE_RESIDUAL_TRAJECTORY_FILE"'
    )
    (suite.path / "leak.json").write_text(json.dumps([f"echo {FAKE_KEY}", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]))
    result = suite.runpytest_subprocess(
        "residual_tests", "--dataset=data", "--backend=local", "--results-dir=out", "-p", "no:cacheprovider",
        f"--agent={leak}", "--agent=mini-swe-agent", "--model=deterministic",
        "--agent-option=script=leak.json", "--agent-option=env=OPENAI_API_KEY,HF_TOKEN",
        f"--agent-option=model.api_key={FAKE_KEY}", "-v",
    )
    assert result.ret == 0, result.stdout.str()
    (run_dir,) = (suite.path / "out").iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(records) == 4
    cmd_clean = next(r for r in records if r["agent"].startswith("cmd:") and r["start"] == "clean")
    assert "leaked.txt" in cmd_clean["final_patch"] and REDACTED in cmd_clean["final_patch"]  # it did leak...
    assert cmd_clean["agent_config"]["options"]["model.api_key"] == REDACTED
    files = {p.name for p in run_dir.rglob("*") if p.is_file()}
    assert {"results.jsonl", "summary.json", "summary.md"} <= files and any(n.endswith(".json") for n in files)
    text = all_text(run_dir)
    assert FAKE_KEY not in text and FAKE_TOKEN not in text  # ...and no file of the run holds it
    assert FAKE_KEY not in result.stdout.str() + result.stderr.str()
