"""No agent forges its verdict: contradicted rewards are failures, on the real engine (issue 33).

Each attacker is a `cmd:` agent run through `run_item` on a real DockerBackend, on the factory's
repo task (tests/config.json lists its acceptance tests) and on the machine task (no metadata:
its expected tests come from the verifier's run on the clean state). Before this, each of them
scored a success: reward 1 from a report the code under test wrote, or from a runner that never
ran the hidden tests. Now each is the agent's failure with the reason in `contradicted`, and an
honest agent on the same tasks still succeeds.
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Iterator
from typing import Any

import pytest
from attackers import MACHINE_FIX, as_service, attack_task, machine_task
from dockerneeded import World, containers_of, docker_world, engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from scripted_agents import FIX_CLAMP

from swe_residual.agents import resolve_agent

pytestmark = [*requires_docker, pytest.mark.slow]

ACCEPTANCE = ("test_add", "test_clamp_low", "test_clamp_high", "test_clamp_inside")


def _junit(names: tuple[str, ...], classname: str) -> str:
    cases = "".join(f'<testcase classname="{classname}" name="{name}"/>' for name in names)
    return f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>'


# The module under test, imported by the hidden tests, writes a JUnit report of passes where
# pytest would and ends the process with status 0 before pytest reports anything.
FORGE_AT_IMPORT = "printf '%s\\n' " + shlex.quote(
    "import os\n"
    "_logs = os.environ.get('VERIFIER_LOGS_DIR', '/logs/verifier')\n"
    f"open(_logs + '/junit.xml', 'w').write({_junit(ACCEPTANCE, 'test_calc')!r})\n"
    "os._exit(0)\n"
) + " | cat - calc.py > calc.new && mv calc.new calc.py"

# Machine track: a python3 first on the PATH that writes a lone passing test and exits 0.
FAKE_PYTHON = (
    "printf '%s\\n' '#!/bin/sh' "
    + shlex.quote(f"echo '{_junit(('test_ok',), 'test_ok')}' > /logs/verifier/junit.xml")
    + " 'exit 0' > /usr/local/bin/python3 && chmod +x /usr/local/bin/python3"
)

# Machine track: a .pth in the system site-packages, read before the suite's own (the names sort
# first), ends every Python with status 0 after writing a report of the expected test passing.
SITE_PTH = (
    "site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])') && "
    "printf '%s\\n' " + shlex.quote(
        "import os; os.environ.get('VERIFIER_LOGS_DIR') and (open(os.environ['VERIFIER_LOGS_DIR'] + '/junit.xml', 'w')"
        f".write({_junit(('test_done',), 'test_done')!r}), os._exit(0))"
    ) + " > \"$site/aaa_pass.pth\""
)

# Machine track: a loop waits for test.sh to start (after the suite hashed the hidden tests it
# copied in), swaps the hidden test for one that passes under the same name, and puts the task's
# back as soon as pytest has written its report, so the files hashed after the run are the task's again.
# Under a listening process, kept running as a service (issue 48 freezes any other leftover).
SWAP_LOOP = as_service(
    'until pgrep -f "bash /tests/tes[t].sh" >/dev/null; do sleep 0.01; done; '
    'cp /tests/test_done.py /var/tmp/orig.py; '
    'printf "def test_done():\\n    pass  # SWAPPED\\n" > /tests/test_done.py; '
    'while [ ! -f /logs/verifier/junit.xml ]; do :; done; cp /var/tmp/orig.py /tests/test_done.py', 9913)




@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("forged")
    tag = secrets.token_hex(3)
    ids = {name: f"{name}-{tag}" for name in ("separate", "machine")}
    attack_task(root / "data", ids["separate"], environment_mode="separate")
    machine_task(root / "data", ids["machine"])
    with docker_world(root, ids) as world:
        yield world


def _run(world: World, task: str, command: str) -> dict[str, Any]:
    return world.run(task, resolve_agent(f"cmd:{command}"))


def _contradicted(record: dict[str, Any], *phrases: str) -> None:
    """The agent's failure: reward 0 where the reward file said 1, one attempt, the reason recorded."""
    assert record["outcome"] == "failure", (record["outcome"], record["error"], record["verifier_notes"])
    assert len(record["attempts"]) == 1, record["attempts"]
    assert record["reward"] == 0.0 and record["rewards"]["reward"] == 1.0, (record["reward"], record["rewards"], record["verifier_notes"])
    reason = record["contradicted"]
    assert reason and reason.startswith("contradicted reward"), record["verifier_notes"]
    for phrase in phrases:
        assert phrase in reason, reason


def test_honest_agents_still_succeed(world) -> None:
    record = _run(world, "separate", FIX_CLAMP)
    assert (record["outcome"], record["reward"]) == ("success", 1.0), record["verifier_notes"]
    assert "contradicted" not in record
    record = _run(world, "machine", MACHINE_FIX)
    assert (record["outcome"], record["reward"]) == ("success", 1.0), record["verifier_notes"]
    assert "contradicted" not in record


def test_code_under_test_forging_a_report_and_exiting_is_the_agents_failure(world) -> None:
    # Separate verifier, isolated pytest: the forger is the module the hidden tests import.
    record = _run(world, "separate", FORGE_AT_IMPORT)
    _contradicted(record, "ended without finishing")
    assert all(record["tests"][f"test_calc.{name}"] == "passed" for name in ACCEPTANCE)  # the forged report, kept


def test_a_fake_test_runner_on_the_path_is_the_agents_failure(world) -> None:
    # Before issue 48 the reporter's account contradicted it; now the toolchain check stops it first.
    record = _run(world, "machine", FAKE_PYTHON)
    assert (record["outcome"], record["reward"], len(record["attempts"])) == ("failure", 0.0, 1), record["verifier_notes"]
    assert any(note.startswith("tampering: the verifier's toolchain") and "/usr/local/bin/python3" in note
               for note in record["verifier_notes"]), record["verifier_notes"]


def test_a_site_packages_pth_ending_python_is_the_agents_failure(world) -> None:
    record = _run(world, "machine", SITE_PTH)
    _contradicted(record, "no pytest ran under the suite's reporter")


def test_hidden_tests_swapped_and_restored_during_the_run_are_the_agents_failure(world) -> None:
    record = _run(world, "machine", SWAP_LOOP)
    _contradicted(record, "not the task's when pytest imported them", "test_done.py")
