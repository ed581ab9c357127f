"""`--rollouts=K` through pytester, as a user runs it: a flaky `cmd:` agent that solves a task
with probability 1/2 (bash's $RANDOM, drawn afresh in every instance), on the local backend.

The agent is random on purpose: its rollouts really differ, as a model's at temperature 1.0
do. So two runs never give the same figures, and "the merge of two shards equals one run" is
checked on the same records: `swe-residual report` of the two shard directories against the
report of one results file holding both shards' lines (a single run's file), and both against
the means computed here from the records by hand.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from suitecheckout import make_checkout
from taskfactory import SOLVED_SOURCE, make_task

from swe_residual.cli.main import main as cli_main

pytestmark = pytest.mark.slow

K = 4
# Solves (writes the fixed calc.py) when $RANDOM is even; submits either way.
FLAKY = "#!/bin/bash\nif [ $((RANDOM % 2)) -eq 0 ]; then\ncat > calc.py <<'EOF'\n" + SOLVED_SOURCE + "EOF\nfi\nexit 0\n"


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    """Two tasks: alpha (one state) and beta (two states): 2 clean + 3 states = 5 starts."""
    make_checkout(pytester.path, monkeypatch, tmp_path / "cache")
    data = pytester.path / "data"
    make_task(data, "alpha")
    make_task(data, "beta", states={
        "drafter-1": {"calc.py": "def add(a, b):\n    return a + b\n\ndef clamp(v, lo, hi):\n    return min(v, hi)\n"},
        "patcher-1": {"calc.py": "def add(a, b):\n    return a + b\n\ndef clamp(v, lo, hi):\n    return max(v, lo)\n"},
    })
    (pytester.path / "flaky.sh").write_text(FLAKY)
    return pytester


def run(suite: pytest.Pytester, *args: str) -> pytest.RunResult:
    return suite.runpytest_subprocess("residual_tests", "--dataset=data", "--backend=local", "--results-dir=out",
                                      "-p", "no:cacheprovider", "--agent=cmd:bash ./flaky.sh", *args)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def start_of(record: dict) -> tuple:
    return record["task"], record["state"]


def by_hand(recs: list[dict]) -> tuple[float, float]:
    """Residual and Clean in percent: each start the mean of its rollouts, a task's states
    averaged, then the tasks."""
    runs: dict[tuple, list[int]] = defaultdict(list)
    for r in recs:
        runs[start_of(r)].append(r["outcome"] == "success")
    tasks = sorted({r["task"] for r in recs})
    clean = [sum(runs[(t, None)]) / len(runs[(t, None)]) for t in tasks]
    residual = []
    for t in tasks:
        states = [sum(v) / len(v) for (task, state), v in runs.items() if task == t and state is not None]
        residual.append(sum(states) / len(states))
    return 100 * sum(residual) / len(residual), 100 * sum(clean) / len(clean)


def figures(summary: dict) -> dict:
    """The summary less what differs between two reports of the same records (run ids, times)."""
    return {agent: {scope: {k: v for k, v in block.items()} for scope, block in data["tracks"].items()}
            for agent, data in summary["agents"].items()}


def test_every_rollout_is_its_own_item_and_record_and_two_shards_merge_to_one_run(
        suite: pytest.Pytester, tmp_path: Path) -> None:
    listed = run(suite, f"--rollouts={K}", "--collect-only", "-q")
    ids = [line.split("[", 1)[1].rstrip("]") for line in listed.outlines if "test_start[" in line]
    assert len(ids) == 5 * K
    assert sum(i.endswith("/alpha/clean#r3") for i in ids) == 1
    assert sum(i.endswith("/beta/residual:patcher-1#r0") for i in ids) == 1

    shards = []
    for shard in ("1/2", "2/2"):
        name = "s" + shard[0]
        result = run(suite, f"--rollouts={K}", f"--shard={shard}", f"--run-id={name}")
        assert result.ret == 0, result.stdout.str()
        shards.append(suite.path / "out" / name)
    parts = [records(d / "results.jsonl") for d in shards]
    # every rollout of a task in the shard of its task; the two shards hold different tasks
    assert all(len({r["task"] for r in part}) == 1 for part in parts)
    assert {r["task"] for r in parts[0]} != {r["task"] for r in parts[1]}
    union = parts[0] + parts[1]
    # every record present: 5 starts x 4 rollouts, each rollout index 0..3 once per start
    assert len(union) == 5 * K
    per_start: dict[tuple, list[int]] = defaultdict(list)
    for r in union:
        per_start[start_of(r)].append(r["rollout"])
    assert len(per_start) == 5 and all(sorted(v) == list(range(K)) for v in per_start.values())
    # the agent is flaky indeed: of 20 fair coins, all alike has a chance of 2 in a million
    assert {r["outcome"] for r in union} == {"success", "failure"}
    # each rollout kept its own trajectory file
    assert len({r["trajectory"] for r in union}) == 5 * K

    merged_dir, single_dir = tmp_path / "merged", tmp_path / "single"
    assert cli_main(["report", *map(str, shards), "--out", str(merged_dir)]) == 0
    joined = tmp_path / "one-run" / "results.jsonl"
    joined.parent.mkdir()
    joined.write_text("".join((d / "results.jsonl").read_text() for d in shards))
    assert cli_main(["report", str(joined), "--out", str(single_dir)]) == 0
    merged = json.loads((merged_dir / "summary.json").read_text())
    single = json.loads((single_dir / "summary.json").read_text())
    assert figures(merged) == figures(single)
    ((agent, block),) = merged["agents"].items()
    repo = block["tracks"]["repo"]
    residual, clean = by_hand(union)
    assert repo["residual"] == pytest.approx(residual) and repo["clean"] == pytest.approx(clean)
    assert (repo["n_tasks"], repo["n_states"]) == (2, 3)
    assert repo["pass_at_k"]["k"] == K and merged["infra"]["items"] == 5 * K
    assert 0 <= repo["disagreement"]["residual"] <= 100 and repo["disagreement"]["states"] == 3


def test_a_resumed_rollout_run_keeps_its_finished_rollouts(suite: pytest.Pytester) -> None:
    first = run(suite, f"--rollouts={K}", "--run-id=r")
    assert first.ret == 0, first.stdout.str()
    run_dir = suite.path / "out" / "r"
    assert json.loads((run_dir / "run.json").read_text())["settings"]["rollouts"] == K
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    kept = lines[:7]  # as if interrupted after 7 of the 20 items
    (run_dir / "results.jsonl").write_text("\n".join(kept) + "\n")
    # `--resume` alone: the rollouts come from run.json
    resumed = suite.runpytest_subprocess("residual_tests", "-p", "no:cacheprovider", "--resume=out/r")
    assert resumed.ret == 0, resumed.stdout.str()
    resumed.stdout.fnmatch_lines(["*13 passed*"])
    after = (run_dir / "results.jsonl").read_text().splitlines()
    assert after[:7] == kept  # the finished rollouts, as they were
    keys = {(r["task"], r["state"], r["rollout"]) for r in map(json.loads, after)}
    assert len(after) == len(keys) == 5 * K
    # a resume that changes the rollouts is refused, naming the setting
    changed = suite.runpytest_subprocess("residual_tests", "-p", "no:cacheprovider", "--resume=out/r",
                                         "--rollouts=2")
    assert changed.ret == pytest.ExitCode.USAGE_ERROR
    changed.stderr.fnmatch_lines(["*--rollouts: the run has 4, this invocation 2*"])


def test_a_bad_rollouts_value_is_named_with_its_source(suite: pytest.Pytester) -> None:
    result = run(suite, "--rollouts=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*rollouts: bad value '0' from the command line --rollouts: must be 1 or more*"])
    suite.makeini("[pytest]\nresidual_rollouts = two\n")
    from_ini = run(suite)
    assert from_ini.ret == pytest.ExitCode.USAGE_ERROR
    from_ini.stderr.fnmatch_lines(["*rollouts: bad value 'two' from the ini option residual_rollouts*"])
