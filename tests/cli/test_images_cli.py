"""`swe-residual images list|prune` against the real engine.

Each test builds its own images through the suite's build path (`DockerBackend.build_image`,
FROM the base image) under a task name no other test uses, and every prune that may remove
anything is scoped with `--task`: other tests (xdist workers) share the engine and its cached
images. Unscoped commands here are read-only (`list`, `prune --dry-run`). Everything a test
makes is removed in the fixtures' finally blocks, whatever the test did.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors
import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse

from swe_residual.cli.main import main as cli_main
from swe_residual.environments.docker import TASK_REPO, TEMP_REPO, DockerBackend, connect
from swe_residual.environments.docker.ancestry import ImageGraph, Node
from swe_residual.environments.docker.hygiene import HOST, LABEL, process_start
from swe_residual.environments.docker.inventory import OTHER, kind_of
from swe_residual.environments.docker.verification import VERIFIER_REPO
from swe_residual.environments.docker.base_image import BASE_IMAGE, ensure_base_image

pytestmark = requires_docker

PAYLOAD_BYTES = 2_000_000  # each build's own layer: what pruning it must free


@dataclass
class Engine:
    """The engine, a backend to build with, and everything this test made there."""

    client: docker.DockerClient
    backend: DockerBackend
    context_root: Path
    task: str
    foreign: str  # a repository no suite code writes to
    refs: list[str] = field(default_factory=list)
    containers: list[str] = field(default_factory=list)

    def build(self, repo: str, payload: bytes | None = None) -> str:
        """A suite build of `<repo>:<task>-<hash>` carrying its own random payload; its tag."""
        context = self.context_root / secrets.token_hex(4)
        context.mkdir(parents=True)
        (context / "payload.bin").write_bytes(payload or os.urandom(PAYLOAD_BYTES))
        (context / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nCOPY payload.bin /payload.bin\n")
        tag, _ = self.backend.build_image(context, context / "Dockerfile", repo=repo, name=self.task, timeout_sec=600)
        self.refs.append(tag)
        return tag

    def tag(self, image: str, repository: str, name: str) -> str:
        self.client.api.tag(image, repository, name)
        self.refs.append(f"{repository}:{name}")
        return f"{repository}:{name}"

    def unlabelled(self) -> str:
        """An image of no one's suite: FROM scratch, no label, in an unrelated repository."""
        context = self.context_root / secrets.token_hex(4)
        context.mkdir(parents=True)
        (context / "file.txt").write_text(self.task)
        (context / "Dockerfile").write_text("FROM scratch\nCOPY file.txt /file.txt\n")
        tag = f"{self.foreign}:unlabelled"
        self.refs.append(tag)
        for chunk in self.client.api.build(path=str(context), tag=tag, rm=True, forcerm=True, decode=True):
            assert "error" not in chunk, chunk
        return tag

    def temporary(self, owner_pid: int, start: str) -> str:
        """A commit to the temporary repository, labelled as hygiene labels them, for this task."""
        created = self.client.api.create_container(BASE_IMAGE, command=["true"])
        self.containers.append(created["Id"])
        name = secrets.token_hex(8)
        labels = {LABEL: "1", f"{LABEL}.pid": str(owner_pid), f"{LABEL}.pid-start": start,
                  f"{LABEL}.host": HOST, f"{LABEL}.kind": "state", f"{LABEL}.task": self.task}
        self.refs.append(f"{TEMP_REPO}:{name}")
        self.client.api.commit(created["Id"], repository=TEMP_REPO, tag=name,
                               changes=[f"LABEL {key}={json.dumps(value)}" for key, value in labels.items()])
        return f"{TEMP_REPO}:{name}"

    def run(self, image: str) -> str:
        created = self.client.api.create_container(image, command=["sleep", "infinity"])
        self.containers.append(created["Id"])
        self.client.api.start(created["Id"])
        return str(created["Id"])

    def present(self, reference: str) -> bool:
        try:
            self.client.api.inspect_image(reference)
        except docker.errors.NotFound:
            return False
        return True


@pytest.fixture(scope="module")
def base_image() -> str:
    return ensure_base_image(progress=lambda line: print(line, file=sys.stderr))


@pytest.fixture
def engine(tmp_path: Path, base_image: str) -> Iterator[Engine]:
    token = secrets.token_hex(4)
    client = connect()
    backend = DockerBackend(cache_dir=tmp_path / "cache", progress=lambda line: None, sweep_at_start=False,
                            client=client)
    made = Engine(client, backend, tmp_path / "contexts", f"images-cli-{token}", f"residual-images-test-{token}")
    try:
        yield made
    finally:
        backend.close()
        for container in made.containers:
            try:
                client.api.remove_container(container, v=True, force=True)
            except docker.errors.NotFound:
                pass
        for ref in reversed(made.refs):  # names before the images they were given to
            try:
                client.api.remove_image(ref, force=True)
            except docker.errors.NotFound:
                pass
        client.close()


def images_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli_main(["images", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def listed(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    code, out, _ = images_cli(capsys, "list", "--json", *args)
    assert code == 0
    return list(json.loads(out)["images"])


def removal_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(("removed ", "would remove "))]


def freed_mb(out: str) -> float:
    found = re.search(r"^(?:would free|freed) ([0-9.]+) MB", out, re.MULTILINE)
    assert found, out
    return float(found[1])


# -- list --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_list_shows_the_suites_images_with_task_and_size_and_nothing_foreign(
    engine: Engine, capsys: pytest.CaptureFixture[str],
) -> None:
    task_tag = engine.build(TASK_REPO)
    verifier_tag = engine.build(VERIFIER_REPO)
    unlabelled = engine.unlabelled()
    # Foreign names on the suite's own images and the unlabelled one: a suite image re-tagged
    # by a user, and a repository that looks like the suite's but lacks `swe-residual=1`.
    alias = engine.tag(task_tag, engine.foreign, "alias")
    lookalike = engine.tag(unlabelled, f"swe-residual-lookalike-{engine.task}", "x")

    everything = listed(capsys)
    by_tag = {entry["tag"]: entry for entry in everything}
    assert {unlabelled, alias, lookalike}.isdisjoint(by_tag)
    assert by_tag[BASE_IMAGE]["kind"] == "base"
    task_entry, verifier_entry = by_tag[task_tag], by_tag[verifier_tag]
    assert (task_entry["kind"], task_entry["task"]) == ("task", engine.task)
    assert (verifier_entry["kind"], verifier_entry["task"]) == ("verifier", engine.task)
    base_size = by_tag[BASE_IMAGE]["size_bytes"]
    assert task_entry["size_bytes"] >= base_size + PAYLOAD_BYTES
    assert alias in task_entry["tags"]  # every name of the image is shown, the foreign one too

    assert [entry["tag"] for entry in listed(capsys, "--task", engine.task)] == [task_tag, verifier_tag]

    code, out, _ = images_cli(capsys, "list", "--task", engine.task)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["KIND", "TASK", "TAG", "SIZE", "MB", "CREATED", "(UTC)"]
    assert lines[1].split()[:3] == ["task", engine.task, task_tag]
    assert lines[2].split()[:3] == ["verifier", engine.task, verifier_tag]
    assert float(lines[1].split()[3]) >= (base_size + PAYLOAD_BYTES) / 1e6 - 0.1
    # Two payloads on one base: the total counts the shared base layers once.
    total = re.fullmatch(r"2 name\(s\) on 2 image\(s\), ([0-9.]+) MB on disk .*", lines[3])
    assert total, out
    assert abs(float(total[1]) - (base_size + 2 * PAYLOAD_BYTES) / 1e6) < 1.0


# -- prune -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_prune_removes_a_superseded_build_and_keeps_the_newest(
    engine: Engine, capsys: pytest.CaptureFixture[str],
) -> None:
    old = engine.build(TASK_REPO)
    verifier = engine.build(VERIFIER_REPO)  # older than the new task build, but of another kind
    new = engine.build(TASK_REPO)

    code, out, _ = images_cli(capsys, "prune", "--task", engine.task, "--dry-run")
    assert code == 0
    assert removal_lines(out) == [f"would remove {old} [task {engine.task}]: superseded by {new}"]
    assert freed_mb(out) >= PAYLOAD_BYTES / 1e6
    assert all(engine.present(tag) for tag in (old, verifier, new))  # a dry run removes nothing

    code, out, _ = images_cli(capsys, "prune", "--task", engine.task)
    assert code == 0
    assert removal_lines(out) == [f"removed {old} [task {engine.task}]: superseded by {new}"]
    assert freed_mb(out) >= PAYLOAD_BYTES / 1e6
    assert not engine.present(old)
    assert engine.present(new) and engine.present(verifier)

    code, out, _ = images_cli(capsys, "prune", "--task", engine.task)
    assert (code, removal_lines(out)) == (0, [])
    assert "nothing to remove" in out


@pytest.mark.slow
def test_prune_all_of_a_task_spares_foreign_names_and_images_in_use(
    engine: Engine, capsys: pytest.CaptureFixture[str],
) -> None:
    task_tag = engine.build(TASK_REPO)
    verifier_tag = engine.build(VERIFIER_REPO)
    unlabelled = engine.unlabelled()
    alias = engine.tag(task_tag, engine.foreign, "alias")
    container = engine.run(verifier_tag)

    # Unscoped but read-only: everything of the suite would go, nothing foreign would.
    code, out, _ = images_cli(capsys, "prune", "--all", "--dry-run")
    assert code == 0
    would = removal_lines(out)
    assert any(line.startswith(f"would remove {task_tag} ") for line in would)
    assert not [line for line in would if unlabelled in line or alias in line or verifier_tag in line]
    assert re.search(rf"^kept {re.escape(verifier_tag)} .*used by running container", out, re.MULTILINE)
    assert all(engine.present(ref) for ref in (task_tag, verifier_tag, unlabelled, alias))

    code, out, _ = images_cli(capsys, "prune", "--all", "--task", engine.task)
    assert code == 0
    # The user's alias holds the task image: only the suite's name goes, and no space is freed.
    held = " (name only: a container, child image or other name holds the image)"
    assert removal_lines(out) == [f"removed {task_tag} [task {engine.task}]: --all{held}"]
    assert freed_mb(out) == 0.0
    assert f"kept {verifier_tag} [verifier {engine.task}]: used by running container" in out
    assert not engine.present(task_tag)
    assert engine.present(alias) and engine.present(unlabelled) and engine.present(verifier_tag)

    engine.client.api.remove_container(container, v=True, force=True)
    code, out, _ = images_cli(capsys, "prune", "--all", "--task", engine.task)
    assert code == 0
    assert removal_lines(out) == [f"removed {verifier_tag} [verifier {engine.task}]: --all"]
    assert freed_mb(out) >= PAYLOAD_BYTES / 1e6
    assert not engine.present(verifier_tag)
    assert listed(capsys, "--task", engine.task) == []
    assert engine.present(alias) and engine.present(unlabelled)


@pytest.mark.slow
def test_prune_takes_dead_owners_temporaries_and_spares_live_ones(
    engine: Engine, capsys: pytest.CaptureFixture[str],
) -> None:
    finished = subprocess.Popen(["true"])
    finished.wait()
    live = engine.temporary(os.getpid(), process_start(os.getpid()) or "")
    dead = engine.temporary(finished.pid, "1")

    kinds = {entry["tag"]: (entry["kind"], entry["task"]) for entry in listed(capsys, "--task", engine.task)}
    assert kinds[live] == ("temporary", engine.task)

    code, out, _ = images_cli(capsys, "prune", "--all", "--task", engine.task, "--dry-run")
    assert code == 0
    assert re.search(rf"^kept {re.escape(live)} .*live process", out, re.MULTILINE)
    # Any backend's start-up sweep (other xdist workers) may remove the dead owner's image
    # first; while it is still there, the dry run must have chosen it.
    if engine.present(dead):
        assert f"would remove {dead} [temporary {engine.task}]: temporary image of a dead process" in out

    code, out, _ = images_cli(capsys, "prune", "--task", engine.task)
    assert code == 0
    assert not engine.present(dead)
    assert engine.present(live)
    assert not [line for line in removal_lines(out) if live in line]


def test_no_engine_is_exit_status_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    for args in (["list"], ["prune", "--dry-run"]):
        code, out, err = images_cli(capsys, *args)
        assert code == 2
        assert "no Docker engine answers" in err and out == ""


# -- the rules, without the engine -------------------------------------------------------------
def test_labels_alone_never_make_an_image_the_suites() -> None:
    inherited = {f"{LABEL}.kind": "base", f"{LABEL}.recipe": "abc"}  # anything FROM the base has these
    assert kind_of("myproject:dev", inherited) is None
    assert kind_of("myproject:dev", {LABEL: "1"}) is None
    assert kind_of("swe-residual-lookalike:x", inherited) is None
    assert kind_of("swe-residual-future:x", {LABEL: "1"}) == OTHER
    assert kind_of("swe-residual-agent:t-0123456789abcdef", {}) == "agent-setup"
    assert kind_of(f"{TEMP_REPO}:0123", {}) == "temporary"


def test_the_graph_deletes_parents_only_when_nothing_else_holds_them() -> None:
    graph = ImageGraph([
        Node("base", None, 100, frozenset({"swe-residual-base:bookworm"})),
        Node("step", "base", 100, frozenset()),  # an intermediate image of a build
        Node("old", "step", 130, frozenset({"swe-residual-task:t-1"})),
        Node("new", "step", 150, frozenset({"swe-residual-task:t-2"})),
        Node("state", "new", 151, frozenset({"swe-residual-state:t-s-1"})),
    ])
    assert graph.own_size("old") == 30 and graph.own_size("base") == 100
    assert graph.deletions(["swe-residual-task:t-1"], set()) == {"old"}  # `new` still needs `step`
    assert graph.deletions(["swe-residual-task:t-2"], set()) == set()  # `state` sits on it
    assert graph.deletions(["swe-residual-task:t-1", "swe-residual-task:t-2", "swe-residual-state:t-s-1"],
                           set()) == {"old", "new", "state", "step"}
    assert graph.deletions(["swe-residual-task:t-1"], {"old"}) == set()  # a container uses it
    assert graph.disk_bytes(["old", "new"]) == 100 + 0 + 30 + 50
