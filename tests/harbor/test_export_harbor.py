"""`swe-residual export harbor`: every start of the sample dataset as a plain Harbor task.

Harbor's own code judges the output (its task model and `harbor lint`, run from its own virtual
environment as tests/harbor/test_harbor_lint.py does); the real engine judges the images: a Residual
State's exported environment must build into the state itself (the same working tree as the
state's patch on the base commit, nothing committed), a machine state's into the files its
replay leaves, and its separate verifier into the CLEAN image that grades it as the suite does.
"""

from __future__ import annotations

import io
import json
import secrets
import subprocess
import tarfile
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from conftest import REPO_ROOT
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from harbortool import harbor_bin  # noqa: F401 - the fixture

from swe_residual.cli.main import main
from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.states.diffparse import parse_diff
from swe_residual.dataset.errors import DatasetError
from swe_residual.residualize.harbor.export import export_dataset
from swe_residual.residualize.harbor.export_states import PATCH_IN_IMAGE, PATCH_NAME
from swe_residual.residualize.harbor.export_toml import edit_task_toml
from swe_residual.dataset.states.state import ResidualState
from swe_residual.dataset.task import Task

SAMPLE = REPO_ROOT / "datasets" / "sample"
TEST_REPO = "swe-residual-export-test"
LIVE = ("artifact-http-server", "drafter-1")  # declares [machine] live_processes = true


F = TypeVar("F", bound=Callable[..., None])


def docker_test(function: F) -> F:
    for mark in (*requires_docker, pytest.mark.slow):
        function = mark(function)
    return function


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("harbor-export") / "sample"
    assert main(["export", "harbor", str(SAMPLE), "--out", str(out)]) == 0
    return out


def summary_of(out: Path) -> dict:
    return json.loads((out / "export.json").read_text())


def tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file below `root`: relative path -> (permission bits, bytes)."""
    return {str(p.relative_to(root)): (p.stat().st_mode & 0o777, p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file()}


# -- what is exported ----------------------------------------------------------------------------
@pytest.mark.unit
def test_every_start_of_the_sample_is_exported_or_skipped_with_its_reason(exported: Path) -> None:
    summary = summary_of(exported)
    dataset = load_dataset(SAMPLE)
    assert summary["exported"] == {"clean": len(dataset.entries), "residual": dataset.n_states - 1}
    assert summary["exported_by_track"] == {"machine": {"clean": 3, "residual": 2},
                                            "repo": {"clean": 9, "residual": 18}}
    [skipped] = summary["skipped"]
    assert (skipped["task"], skipped["state"], skipped["start"]) == (*LIVE, "residual")
    assert "live_processes" in skipped["reason"]
    directories = sorted(p.name for p in exported.iterdir() if p.is_dir())
    assert directories == sorted(item["directory"] for item in summary["tasks"])
    assert "artifact-http-server" in directories and "artifact-http-server--drafter-1" not in directories
    assert any("spanfmt-days-weeks:1.0" in note and "must exist where Harbor runs" in note
               for note in summary["notes"])


@pytest.mark.unit
def test_the_summary_is_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "harbor", str(SAMPLE), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "exported 12 Clean Start(s) and 20 Residual State(s)" in printed
    assert "artifact-http-server/drafter-1 (residual): its state.toml declares [machine] live_processes" in printed
    assert f"summary: {tmp_path / 'out' / 'export.json'}" in printed


@pytest.mark.unit
def test_clean_start_is_the_task_without_its_states(exported: Path) -> None:
    for entry in load_dataset(SAMPLE).entries:
        task = entry.task
        source = {k: v for k, v in tree(task.path).items() if not k.startswith("residual/")}
        copy = tree(exported / task.id)
        assert copy.keys() == source.keys()
        assert {k: v for k, v in copy.items() if k != "task.toml"} == {k: v for k, v in source.items()
                                                                        if k != "task.toml"}
        metadata = tomllib.loads(copy["task.toml"][1].decode())["metadata"]
        assert metadata["swe_residual_source_task"] == task.id and metadata["swe_residual_start"] == "clean"
        assert "swe_residual_source_state" not in metadata


@pytest.mark.unit
def test_residual_task_carries_its_state_and_traces_back_to_it(exported: Path) -> None:
    for entry in load_dataset(SAMPLE).entries:
        for state in entry.states:
            target = exported / f"{entry.task.id}--{state.id}"
            if (entry.task.id, state.id) == LIVE:
                assert not target.exists()
                continue
            config = tomllib.loads((target / "task.toml").read_text())
            source = tomllib.loads((entry.task.path / "task.toml").read_text())
            assert config["metadata"] == {**source["metadata"], "swe_residual_dataset": "sample",
                                          "swe_residual_source_task": entry.task.id,
                                          "swe_residual_start": "residual", "swe_residual_source_state": state.id,
                                          "swe_residual_predecessor": state.predecessor}
            assert config["task"]["name"] == f"{source['task']['name']}--{state.id}"
            # Same instruction, solution, timeouts and resources; only the image differs.
            assert (target / "instruction.md").read_bytes() == (entry.task.path / "instruction.md").read_bytes()
            assert tree(target / "solution") == tree(entry.task.solution_dir)
            for table in ("agent", "verifier"):
                assert config[table] == source[table]
            source["environment"].pop("docker_image", None)
            assert config["environment"] == source["environment"]
            dockerfile = (target / "environment" / "Dockerfile").read_text()
            if state.track == "repo":
                assert (target / "environment" / PATCH_NAME).read_bytes() == state.patch_path.read_bytes()
                assert "git -c safe.directory='*' apply --whitespace=nowarn --binary" in dockerfile
            else:
                assert dockerfile.count("\nRUN [") == len(state.read_commands())


@pytest.mark.unit
def test_a_prebuilt_image_becomes_the_base_of_the_state_layer(exported: Path) -> None:
    target = exported / "spanfmt-days-weeks--drafter-1"
    assert "docker_image" not in tomllib.loads((target / "task.toml").read_text())["environment"]
    assert "# docker_image = \"swe-residual-sample/spanfmt-days-weeks:1.0\"" in (target / "task.toml").read_text()
    assert sorted(p.name for p in (target / "environment").iterdir()) == ["Dockerfile", PATCH_NAME]
    assert "\nFROM swe-residual-sample/spanfmt-days-weeks:1.0\n" in (target / "environment" / "Dockerfile").read_text()
    # Its separate verifier already has an image of its own (tests/Dockerfile), kept as it is.
    assert tree(target / "tests") == tree(SAMPLE / "spanfmt-days-weeks" / "tests")


@pytest.mark.unit
def test_reexport_is_byte_identical_and_replaces_the_previous_one(tmp_path: Path, exported: Path) -> None:
    out = tmp_path / "again"
    export_dataset(SAMPLE, out)
    first = tree(out)
    (out / "stale-task").mkdir()
    (out / "stale-task" / "task.toml").write_text("left by an earlier export\n")
    export_dataset(SAMPLE, out)
    assert tree(out) == first == tree(exported)  # same bytes, modes and names wherever it goes
    assert not (out / "stale-task").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["again"]  # no staging or old copy left beside it


@pytest.mark.unit
def test_missing_dataset_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "harbor", str(tmp_path / "nope"), "--out", str(tmp_path / "out")]) == 2
    assert "dataset directory does not exist" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.unit
def test_refuses_to_replace_a_directory_that_is_not_an_export(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    assert main(["export", "harbor", str(SAMPLE), "--out", str(out)]) == 2
    assert "holds no previous export" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    assert main(["export", "harbor", str(SAMPLE), "--out", str(SAMPLE / "exported")]) == 2


def _machine_dataset(tmp_path: Path, states: dict[str, tuple[str, list[dict]]]) -> Path:
    """The sample's backup-retention-config task with the given states (id -> (machine table, commands))."""
    import shutil

    root = tmp_path / "dataset"
    task = root / "backup-retention-config"
    shutil.copytree(SAMPLE / "backup-retention-config", task, ignore=shutil.ignore_patterns("residual"))
    for state_id, (machine, commands) in states.items():
        directory = task / "residual" / state_id
        directory.mkdir(parents=True)
        (directory / "state.toml").write_text(f'track = "machine"\npredecessor = "scripted"\n{machine}\n')
        (directory / "commands.jsonl").write_text("".join(json.dumps(c) + "\n" for c in commands))
    return root


@pytest.mark.unit
def test_machine_states_that_an_image_cannot_hold_are_skipped_with_the_reason(tmp_path: Path) -> None:
    root = _machine_dataset(tmp_path, {
        "background": ("", [{"command": "python3 -m http.server 8000 >/dev/null 2>&1 &"}]),
        "declared-quiet": ("[machine]\nlive_processes = false", [{"command": "echo a && echo b 2>&1"}]),
        "killed": ("[machine]\nlive_processes = false", [{"command": "sleep 5", "timeout_sec": 1, "timed_out": True}]),
        "replayed": ('[machine]\nfidelity = "replay"', [{"command": "true"}]),
        "undeclared-quiet": ("", [{"command": "cd /etc && grep -q x backupctl/backupctl.conf 2>&1 || true",
                                   "cwd": "sub", "timeout_sec": 30}]),
    })
    summary = export_dataset(root, tmp_path / "out")
    reasons = {item["state"]: item["reason"] for item in summary["skipped"]}
    assert set(reasons) == {"background", "killed", "replayed"}
    assert "may leave a process running ('&')" in reasons["background"]
    assert "timed_out" in reasons["killed"] and 'fidelity = "replay"' in reasons["replayed"]
    dockerfile = (tmp_path / "out" / "backup-retention-config--undeclared-quiet" / "environment" / "Dockerfile")
    run = [line for line in dockerfile.read_text().splitlines() if line.startswith("RUN [")]
    assert [json.loads(line[4:])[-3:] for line in run] == [
        ["/root/sub", "30.000", "cd /etc && grep -q x backupctl/backupctl.conf 2>&1 || true"]]


@pytest.mark.unit
def test_task_toml_edits_are_checked_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "task.toml"
    text = '[task]\nname = "o/t"\n[metadata]\n# why\ntrack = "repo"\n[environment]\ndocker_image = "i:1"\n'
    edited = edit_task_toml(path, text, metadata={"k": "v"}, task_name="o/t--s", drop_docker_image=True)
    assert edited == ('[task]\nname = "o/t--s"\n[metadata]\nk = "v"\n# why\ntrack = "repo"\n'
                      '[environment]\n# docker_image = "i:1"\n')
    with pytest.raises(DatasetError, match="already has 'track'"):
        edit_task_toml(path, text, metadata={"track": "x"})
    # A header-looking line inside a multi-line string is not the table.
    tricky = 'description = """\n[metadata]\n"""\nmetadata = { a = 1 }\n'
    with pytest.raises(DatasetError, match="edited safely"):
        edit_task_toml(path, tricky, metadata={"k": "v"})
    assert tomllib.loads(edit_task_toml(path, 'x = 1\n', metadata={"k": "v"})) == {"x": 1, "metadata": {"k": "v"}}


# -- Harbor's judgement --------------------------------------------------------------------------
HARBOR_LOADS = """
import asyncio, json, sys
from pathlib import Path
from harbor.models.job.config import DatasetConfig
from harbor.models.task.task import Task
root = Path(sys.argv[1])
found = asyncio.run(DatasetConfig(path=root).get_task_configs())
tasks = {}
for path in sorted(p for p in root.iterdir() if p.is_dir()):
    task = Task(path)
    tasks[path.name] = {"name": task.name, "metadata": task.config.metadata, "valid": Task.is_valid_dir(path),
                        "instruction": task.instruction}
print(json.dumps({"found": sorted(c.path.name for c in found), "tasks": tasks}))
"""


@pytest.mark.slow
def test_harbor_loads_every_exported_task(harbor_bin: Path, exported: Path) -> None:
    done = subprocess.run([str(harbor_bin / "python"), "-c", HARBOR_LOADS, str(exported)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    records = {item["directory"]: item for item in summary_of(exported)["tasks"]}
    assert loaded["found"] == sorted(records)  # what `harbor run -p DIR` would run
    for directory, task in loaded["tasks"].items():
        record = records[directory]
        assert task["valid"] and task["instruction"].strip()
        assert task["metadata"]["swe_residual_source_task"] == record["source_task"]
        assert task["metadata"]["swe_residual_start"] == record["start"]
        assert task["metadata"].get("swe_residual_source_state") == record["source_state"]
    assert len({task["name"] for task in loaded["tasks"].values()}) == len(records)  # names stay unique


@pytest.mark.slow
def test_harbor_lint_passes_every_exported_task(harbor_bin: Path, exported: Path) -> None:
    directories = sorted(str(p) for p in exported.iterdir() if p.is_dir())
    done = subprocess.run([str(harbor_bin / "harbor"), "lint", *directories], capture_output=True, text=True,
                          timeout=600, cwd=exported, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, ""), done.stdout + done.stderr


# -- the real engine -----------------------------------------------------------------------------
GIT = "git -c safe.directory='*'"
# Two repo-track states: new untracked files with a binary one; a deleted file.
REPO_STATES = [("semver-range-matching", "drafter-1"), ("cron-next-run", "drafter-1")]


class Engine:
    """Builds exported environments with the suite's own builder (FROM local images, nothing
    pulled; ARG BASE_IMAGE keeps its default, as the suite builds the sample) under this test's
    repository, runs throwaway containers of them, and remembers every tag for removal."""

    def __init__(self, lock_dir: Path) -> None:
        from swe_residual.environments.docker.engine import default_client

        self.client = default_client()
        self.lock_dir = lock_dir
        self.token = secrets.token_hex(4)  # parallel test processes never remove each other's tags
        self.tags: list[str] = []

    def build(self, context: Path, name: str) -> str:
        from swe_residual.environments.docker.images import build_image

        tag, _ = build_image(self.client, context, context / "Dockerfile", repo=TEST_REPO, name=f"{name}-{self.token}",
                             timeout_sec=1800, lock_dir=self.lock_dir, progress=lambda _message: None)
        if tag not in self.tags:
            self.tags.append(tag)
        return tag

    def run(self, image: str, script: str, files: dict[str, bytes] | None = None) -> tuple[int, str]:
        """`bash -c script` in a new container with `files` (absolute path -> bytes) put in first;
        (exit status, stdout)."""
        container = self.client.containers.create(image, ["bash", "-c", script], network_disabled=True,
                                                  labels={"swe-residual.test": "export-harbor"})
        try:
            if files:
                buffer = io.BytesIO()
                with tarfile.open(fileobj=buffer, mode="w") as archive:
                    for path, data in files.items():
                        info = tarfile.TarInfo(path.lstrip("/"))
                        info.size = len(data)
                        archive.addfile(info, io.BytesIO(data))
                container.put_archive("/", buffer.getvalue())
            container.start()
            status = container.wait(timeout=600)["StatusCode"]
            return status, container.logs(stdout=True, stderr=False).decode("utf-8", errors="surrogateescape")
        finally:
            container.remove(force=True)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    from swe_residual.environments.docker.engine import remove_images

    made = Engine(tmp_path_factory.mktemp("build-locks"))
    try:
        yield made
    finally:
        # Newest first: the residual images sit on the clean ones' layers.
        remove_images(made.client, list(reversed(made.tags)))
        left = [tag for tag in made.tags if made.client.api.images(name=tag)]
        assert not left, f"images left behind: {left}"


def file_changes(patch: str) -> dict[str, tuple]:
    """path -> (status, binary, post-image blob id): what the patch makes of each file."""
    import re

    changes = {}
    for section in re.split(r"(?m)^(?=diff --git )", patch):
        if not section.startswith("diff --git "):
            continue
        [diff] = parse_diff(section)
        index = re.search(r"(?m)^index [0-9a-f]+\.\.([0-9a-f]+)", section)
        assert index, section[:300]
        changes[diff.path] = (diff.status, diff.binary, index[1][:7])
    return changes


def state_of(task_id: str, state_id: str) -> tuple[Task, ResidualState]:
    entry = load_dataset(SAMPLE).entry(task_id)
    return entry.task, next(state for state in entry.states if state.id == state_id)


@docker_test
@pytest.mark.parametrize(("task_id", "state_id"), REPO_STATES, ids=[f"{t}/{s}" for t, s in REPO_STATES])
def test_residual_image_holds_the_state_uncommitted_on_the_clean_history(
    engine: Engine, exported: Path, task_id: str, state_id: str,
) -> None:
    task, state = state_of(task_id, state_id)
    workdir = task.config.workdir
    clean = engine.build(exported / task_id / "environment", task_id)
    status, out = engine.run(clean, f"cd {workdir} && {GIT} rev-parse HEAD && {GIT} status --porcelain -uall")
    assert status == 0, out
    clean_head, *clean_status = out.splitlines()
    assert clean_head == task.config.base_commit and clean_status == []

    residual = engine.build(exported / f"{task_id}--{state_id}" / "environment", f"{task_id}--{state_id}")
    status, out = engine.run(residual, f"cd {workdir} && {GIT} rev-parse HEAD && {GIT} status --porcelain -uall "
                                       f"&& echo '@@ diff' && {GIT} add -A && {GIT} diff --cached --binary --full-index HEAD")
    assert status == 0, out
    listing, _, diff = out.partition("@@ diff\n")
    head, *porcelain = listing.splitlines()
    assert head == clean_head  # the history is the clean start's: nothing committed
    patch = state.read_patch()
    # In the working tree, nothing staged: new files untracked, deleted ones gone, the rest modified.
    codes = {"??": "added", " D": "deleted", " M": "modified"}
    assert {line[3:]: codes.get(line[:2], line[:2]) for line in porcelain} == {
        path: change[0] for path, change in file_changes(patch).items()}
    assert file_changes(diff) == file_changes(patch)  # same files, same outcome, same bytes
    assert engine.run(residual, f"test ! -e {PATCH_IN_IMAGE}")[0] == 0  # the patch file did not stay behind


@docker_test
def test_residual_separate_verifier_grades_in_the_clean_image(engine: Engine, exported: Path) -> None:
    """The state as it stands grades as state.toml measured; the oracle's work grades 1."""
    import xml.etree.ElementTree as ElementTree

    task_id, state_id = REPO_STATES[1]
    task, state = state_of(task_id, state_id)
    target = exported / f"{task_id}--{state_id}"
    residual = engine.build(target / "environment", f"{task_id}--{state_id}")
    verifier = engine.build(target / "tests", f"{task_id}--{state_id}-verifier")
    collect = {"/tmp/collect.sh": task.config.verifier_collect[0].command.encode()}
    agent = "export ARTIFACTS_DIR=/tmp/artifacts; bash -e /tmp/collect.sh >&2 && cat /tmp/artifacts/workspace.patch"
    status, as_left = engine.run(residual, agent, collect)
    assert status == 0 and as_left
    assert file_changes(as_left) == file_changes(state.read_patch())
    oracle = (f"cd {task.config.workdir} && git checkout -q -- . && git clean -fdxq && git apply /tmp/solution.patch "
              f"&& {agent}")
    assert task.solution_patch is not None
    status, solved = engine.run(residual, oracle, {**collect, "/tmp/solution.patch": task.solution_patch.read_bytes()})
    assert status == 0 and solved

    grade = (f"cd {task.config.workdir} && {GIT} rev-parse HEAD && {GIT} status --porcelain && echo '@@' && "
             "export ARTIFACTS_DIR=/tmp/artifacts VERIFIER_LOGS_DIR=/tmp/logs && bash /tests/test.sh >&2; "
             "cat /tmp/logs/reward.txt; echo '@@'; cat /tmp/logs/junit.xml")
    for patch, reward in ((as_left, "0"), (solved, "1")):
        status, out = engine.run(verifier, grade, {"/tmp/artifacts/workspace.patch": patch.encode()})
        before, got, junit = out.split("@@\n")
        assert before.split() == [task.config.base_commit]  # a clean tree at the base commit
        assert got.strip() == reward
        suite = ElementTree.fromstring(junit).find("testsuite")
        assert suite is not None
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        assert failed == (state.raw["validation"]["n_failed"] if reward == "0" else 0)


@docker_test
def test_machine_state_is_replayed_into_the_image(engine: Engine, exported: Path) -> None:
    source = (SAMPLE / "backup-retention-config/environment/rootfs/etc/backupctl/backupctl.conf").read_text()
    assert "retention_days = 7" in source.splitlines()
    image = engine.build(exported / "backup-retention-config--patcher-1" / "environment",
                         "backup-retention-config--patcher-1")
    status, out = engine.run(image, "cat /etc/backupctl/backupctl.conf && stat -c '%F %a' /srv/backups/data")
    assert status == 0, out
    lines = out.splitlines()
    # What the predecessor's sed and mkdir commands left (command 4 ran from its own cwd, /).
    assert {"target = /srv/backups/data", "retention_days = 14", "exclude = *.swp *.tmp"} <= set(lines)
    assert lines[-1] == "directory 755"
