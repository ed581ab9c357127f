"""Images the way Harbor gets them (issue 47), against a real registry on loopback (tests/registry.py):
a task's docker_image only in that registry is pulled once per engine by three xdist workers; a
Dockerfile FROM an image only there builds; a tag the registry does not have is one clear error;
a registry that does not answer falls back to a stand-in, labelled, said in the run's header and
named in each record; a stand-in already there is replaced by the real image once a registry answers; `--force-build` builds the Dockerfile although docker_image is given.

The image pushed is our own: the debian:bookworm-slim on this engine (its stand-in here, where
nothing can be pulled from the internet), its stand-in labels blanked so
that it reads as what it is once pulled back. Everything pushed, pulled, built or tagged is
removed afterwards.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from conftest import REPO_ROOT
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from registry import Registry, running_registry, unused_port

from swe_residual.dataset.load import load_dataset
from swe_residual.environments.docker import DockerBackend, remove_cached_images
from swe_residual.environments.docker.base_image import ensure_debian_image

pytestmark = requires_docker

TOKEN = secrets.token_hex(4)  # parallel test processes never share a repository name
REPOSITORY = f"swe-residual-test/pulls-{TOKEN}"


@pytest.fixture(scope="session")
def registry() -> Iterator[Registry]:
    with running_registry() as running:
        yield running


@pytest.fixture(scope="module")
def pushed(registry: Registry) -> Iterator[dict]:
    """Two tags of one small image of our own in the registry only: `run` (a task's docker_image)
    and `from` (a Dockerfile's FROM); not on the engine under either name."""
    client = docker.from_env(timeout=600)
    ensure_debian_image("debian:bookworm-slim", progress=lambda _line: None, client=client)
    # No RUN step (a commit costs seconds here): the engine makes a container's working directory.
    dockerfile = ("FROM debian:bookworm-slim\n"
                  'LABEL swe-residual.stand-in="" swe-residual.stand-in.how="" swe-residual.test=pulls\n')
    source = f"swe-residual-test:pulls-source-{TOKEN}"
    for chunk in client.api.build(fileobj=io.BytesIO(dockerfile.encode()), tag=source, rm=True, forcerm=True,
                                  decode=True):
        assert "error" not in chunk, chunk
    references = {tag: registry.reference(f"{REPOSITORY}:{tag}") for tag in ("run", "from")}
    try:
        for tag, reference in references.items():
            client.api.tag(source, registry.reference(REPOSITORY), tag)
            for chunk in client.api.push(registry.reference(REPOSITORY), tag=tag, stream=True, decode=True):
                assert "error" not in chunk, chunk
            client.api.remove_image(reference)  # only in the registry now
        asked = {tag: registry.manifest_asks(REPOSITORY, tag) for tag in references}  # by the pushes
        yield {**references, "asked": asked}
    finally:
        _remove(client, [*references.values(), source])
        client.close()


def _remove(client: docker.DockerClient, references: list[str]) -> None:
    for reference in references:
        try:
            client.api.remove_image(reference, force=True)
        except docker.errors.NotFound:
            pass


def _task(root: Path, task_id: str, *, docker_image: str | None = None, dockerfile: str | None = None) -> Path:
    """A machine-track task that needs nothing but bash: solved when /app/solved exists."""
    task = root / task_id
    (task / "tests").mkdir(parents=True)
    (task / "solution").mkdir()
    if dockerfile is not None:
        (task / "environment").mkdir()
        (task / "environment" / "Dockerfile").write_text(dockerfile)
    image = f'docker_image = "{docker_image}"\n' if docker_image else ""
    (task / "task.toml").write_text(textwrap.dedent(f"""\
        schema_version = "1.3"
        [task]
        name = "test/{task_id}"
        [metadata]
        track = "machine"
        workdir = "/app"
        [verifier]
        environment_mode = "shared"
        timeout_sec = 60.0
        [agent]
        timeout_sec = 60.0
        [environment]
        network_mode = "no-network"
        """) + image)
    (task / "instruction.md").write_text("Leave /app/solved.\n")
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "if [ -e /app/solved ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ntouch /app/solved\n")
    return task


def _run(dataset: Path, out: Path, run_id: str, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--agent=oracle", "--backend=docker", f"--dataset={dataset}",
         f"--results-dir={out}", f"--run-id={run_id}", "-p", "no:cacheprovider", "-rA", *extra],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "SWE_RESIDUAL_CACHE": str(cache)})


def _records(out: Path, run_id: str) -> dict[str, dict]:
    lines = (out / run_id / "results.jsonl").read_text().splitlines()
    return {record["task"]: record for record in map(json.loads, lines)}


@pytest.mark.slow
def test_images_are_used_pulled_built_or_stood_in_for_and_each_record_says_which(
        registry: Registry, pushed: dict, tmp_path: Path) -> None:
    unreachable = f"127.0.0.1:{unused_port()}/swe-residual-test/gone-{TOKEN}:1"
    missing = registry.reference(f"{REPOSITORY}:no-such-tag")
    dataset = tmp_path / "dataset"
    for name in ("pulled-a", "pulled-b", "pulled-c"):
        _task(dataset, name, docker_image=pushed["run"])
    _task(dataset, "from-registry", dockerfile=f"FROM {pushed['from']}\n")
    _task(dataset, "missing-tag", docker_image=missing)
    _task(dataset, "offline", docker_image=unreachable, dockerfile="FROM debian:bookworm-slim\n")
    out, cache = tmp_path / "runs", tmp_path / "cache"
    client = docker.from_env()
    # A stand-in already on the engine under the task's name: a registry answers, so the real image
    # is pulled over it (the stand-in keeps its other name).
    client.api.tag("debian:bookworm-slim", registry.reference(REPOSITORY), "run")
    try:
        first = _run(dataset, out, f"pulls-{TOKEN}", cache, "-n", "3")
        said = first.stdout + first.stderr
        # The tag the registry lacks: that item alone is an error, naming the file, field and answer.
        assert first.returncode == 1, said[-3000:]
        assert "5 passed, 1 error" in first.stdout, said[-3000:]
        # Said for that item (its error, and pytest's summary line when the terminal is wide enough).
        assert f"the registry refused {missing!r}" in said
        assert "missing-tag/task.toml [environment.docker_image]: the registry refused" in said
        # Three workers, three tasks naming one image: one pull of it.
        pulls = {tag: registry.manifest_asks(REPOSITORY, tag) - pushed["asked"][tag] for tag in ("run", "from")}
        assert pulls == {"run": 1, "from": 1}
        records = _records(out, f"pulls-{TOKEN}")
        assert set(records) == {"pulled-a", "pulled-b", "pulled-c", "from-registry", "offline"}
        assert all(record["outcome"] == "success" for record in records.values())
        for name in ("pulled-a", "pulled-b", "pulled-c"):
            image = records[name]["image"]
            assert (image["reference"], image["origin"]) == (pushed["run"], "pulled")
            assert image["digest"].startswith(f"{registry.reference(REPOSITORY)}@sha256:")
            assert image["stands_in_for"] is None
        assert client.api.inspect_image(pushed["run"])["Id"] == records["pulled-a"]["image"]["image_id"] \
            != client.api.inspect_image("debian:bookworm-slim")["Id"]
        assert records["from-registry"]["image"]["origin"] == "built"
        assert records["from-registry"]["image"]["reference"].startswith("swe-residual-task:from-registry-")
        offline = records["offline"]["image"]
        assert (offline["reference"], offline["origin"], offline["stands_in_for"]) == (unreachable, "stand-in", unreachable)
        assert "FROM debian:bookworm-slim replaced by swe-residual-base:bookworm" in offline["how"]
        assert f"no registry answers for {unreachable}" in said

        # Again: the stand-in is on the engine now, and the header says so before any item runs
        # (the header alone: pytest prints it when collecting).
        second = _run(dataset, out, f"pulls-again-{TOKEN}", cache, "-k", "offline", "--collect-only")
        assert second.returncode == 0, (second.stdout + second.stderr)[-3000:]
        header = second.stdout.split("collected", 1)[0]
        assert f"stand-in: this run uses a stand-in for {unreachable}, not the published image" in header

        # --force-build: the Dockerfile is built although the task names an image.
        forced_task = _task(tmp_path / "forced", "forced", docker_image=unreachable,
                            dockerfile=f"FROM {pushed['from']}\n")
        with DockerBackend(run_id=f"pulls-forced-{TOKEN}", cache_dir=cache, force_build=True,
                           progress=lambda _line: None) as backend:
            prepared = backend.task_image(load_dataset(forced_task.parent).entries[0].task)
        assert prepared.source is not None
        assert (prepared.source.origin, prepared.source.stands_in_for) == ("built", None)
        assert prepared.reference.startswith("swe-residual-task:forced-")
    finally:
        for task_id in ("from-registry", "forced"):
            remove_cached_images(task_id, client)
        _remove(client, [pushed["run"], pushed["from"], unreachable])
        client.close()
