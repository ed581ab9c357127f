"""Stage IV on imported Terminal-Bench keystrokes, on the real engine: a state is kept only when
its replay reproduces the recording (two replays agree on files and processes, the replayed pane
ends as the recorded `post-agent` pane did), else it is reported with the first divergence.

The trials are written here as Terminal-Bench wrote them (`commands.txt` in the harness's repr
form, `panes/post-agent.txt`, no cast: the replay waits for each command). Their keys: a blocking
command (the next keys must not go into it), a quote left open (the next line is text), and a
server left running in the foreground. One trial's recorded pane is what that terminal shows;
the other's says the server never started (the pane a drifted replay would leave).
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from taskfactory import keep_tmux_layer, make_machine_task

from swe_residual.cli.main import main as cli_main
from swe_residual.environments.docker import remove_cached_images
from swe_residual.environments.docker.base_image import ensure_base_image

pytestmark = [*requires_docker, pytest.mark.slow]

KEYS = ["sleep 2; echo slept > /app/slept\n", "echo 'open\n", "touch /app/never\n", "' > /app/quoted.txt\n",
        "python3 -m http.server 8000\n"]
REPRODUCED = ("root@0123456789ab:/app# sleep 2; echo slept > /app/slept; tmux wait -S done\n"
              "root@0123456789ab:/app# echo 'open\n"
              "> touch /app/never\n"
              "> ' > /app/quoted.txt\n"
              "root@0123456789ab:/app# python3 -m http.server 8000\n"
              "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...\n\n\n")
# Another trial (a shorter sleep: not a duplicate final state) whose recorded pane says the
# server never started.
DRIFTED_KEYS = [KEYS[0].replace("sleep 2", "sleep 1"), *KEYS[1:]]
DRIFTED = REPRODUCED.replace("sleep 2", "sleep 1").replace(
    "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...\n", "root@0123456789ab:/app#\n")


def _trial(runs: Path, name: str, keys: list[str], pane: str) -> None:
    trial = runs / "collected" / name
    (trial / "panes").mkdir(parents=True)
    (trial / "results.json").write_text(json.dumps({"task_id": "serve-files", "trial_name": name,
                                                    "is_resolved": False, "failure_mode": "unset"}))
    lines = ["['asciinema rec --stdin /logs/agent.cast', 'Enter']", "['clear', 'Enter']", *map(repr, keys),
             "['asciinema rec --stdin /logs/tests.cast', 'Enter']", "['bash ', '/tests/run-tests.sh', 'Enter']"]
    (trial / "commands.txt").write_text("\n".join(lines) + "\n")
    (trial / "panes" / "post-agent.txt").write_text(pane)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    root = tmp_path_factory.mktemp("fidelity")
    keep_tmux_layer()
    make_machine_task(root / "dataset", "serve-files", None, tmux=True)
    _trial(root / "runs", "serve-files.1-of-2", KEYS, REPRODUCED)
    _trial(root / "runs", "serve-files.2-of-2", DRIFTED_KEYS, DRIFTED)
    work, out = root / "work", root / "out"
    try:
        assert cli_main(["import", "terminal-bench", str(root / "runs"), "--dataset", str(root / "dataset"),
                         "--out", str(work), "--agent", "terminus", "--model", "test/model"]) == 0
        assert cli_main(["residualize", "filter", str(work)]) == 0
        cli_main(["residualize", "review", str(work)])
        assert cli_main(["residualize", "review", str(work), "--accept-all-as", "test"]) == 0
        assert cli_main(["residualize", "build", str(work), "--out", str(out), "--backend", "docker",
                            "--repeats", "1"]) == 0
    finally:
        remove_cached_images("serve-files")
    return {"table5": json.loads((work / "table5.json").read_text()), "out": out}


def test_a_replay_that_reproduces_its_recording_is_kept(built: dict) -> None:
    kept = [c for c in built["table5"]["candidates"] if c["state"]]
    assert len(kept) == 1 and kept[0]["attempt"] == 1
    replay = kept[0]["replay"]
    assert replay["pane"] == "matches" and replay["replays_agree"]
    # The quote swallowed `touch /app/never`; the blocking command ended before the next keys.
    assert {"python3 -m http.server 8000", "bash --login"} <= set(replay["processes"])
    state = tomllib.loads((built["out"] / "serve-files" / "residual" / kept[0]["state"] / "state.toml").read_text())
    assert state["provenance"]["stage_iv"]["replay"]["pane"] == "matches"
    assert state["machine"]["fidelity"] == "replay" and state["validation"]["reward"] == 0.0


def test_a_replay_whose_pane_drifted_is_reported_with_the_first_divergence(built: dict) -> None:
    (dropped,) = [c for c in built["table5"]["candidates"] if not c["state"]]
    assert dropped["category"] == "replay_failed"
    assert "the replay does not reproduce the recording: pane:" in dropped["detail"]
    assert "recorded 'root@HOST:/app#', replayed 'Serving HTTP on 0.0.0.0 port 8000" in dropped["detail"]
    assert built["table5"]["table5"]["total"]["replay_failed"] == 1
