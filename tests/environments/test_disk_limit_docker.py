"""`[environment] storage_mb` on the docker backend, against the real engine (issue 33, item 5).

A `cmd:` agent writes past a 64 MiB limit into its repository, /tmp, /root (the container's
writable layer) and the scratch tmpfs: each item ends as the agent's failure, termination
`disk_limit`, with the figures in its message, in one attempt, and no container is left. An
agent writing under its limit is unaffected. The engine's answer to `--storage-opt size=` is
asked once and recorded (fuse-overlayfs here: not supported), and the meter's fallback for an
engine whose host this process cannot see (the engine's `SizeRw`) measures the same writes.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator

import pytest
from dockerneeded import containers_of, engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from taskfactory import SOLVED_SOURCE, make_task

from swe_residual.agents.builtin import CommandAgent
from swe_residual.dataset.task import load_task
from swe_residual.environments.base import StartSpec
from swe_residual.environments.disk_usage import MIB
from swe_residual.environments.docker import LABEL, DockerBackend, remove_cached_images
from swe_residual.environments.docker import disk
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item

pytestmark = [*requires_docker, pytest.mark.slow]

LIMIT_MB = 64
# 200 MiB of zeros (a binary patch deflates them, so a final patch of the repository stays small).
# Far more than the limit, so that "stopped at the limit" is told from "wrote it all" with room
# for a slow reading on a loaded machine.
WRITE_1G = "head -c 1024M /dev/zero > {path}"




@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    root = tmp_path_factory.mktemp("disk")
    task_id = f"disk-{secrets.token_hex(3)}"
    path = make_task(root / "data", task_id, states={}, environment_mode="shared")
    toml = path / "task.toml"
    toml.write_text(toml.read_text() + f"storage_mb = {LIMIT_MB}\n")
    task = load_task(path)
    run_id = f"disk-{secrets.token_hex(4)}"
    backend = DockerBackend(run_id=run_id, cache_dir=root / "cache", progress=lambda _: None)
    try:
        yield task, backend, RunOptions(run_id=run_id, run_dir=root / "run", infra_retries=1), run_id
    finally:
        backend.close()
        remove_cached_images(task_id)


def _run(setup: tuple, command: str) -> dict:
    task, backend, options, run_id = setup
    record = record_json(run_item(task, None, lambda: CommandAgent(command), backend, options))
    assert containers_of(run_id) == []  # the container is removed: the host disk is left intact
    return record


def _written_mib(message: str) -> float:
    found = re.search(r"wrote ([\d.]+) (MiB|GiB)", message)
    assert found, message
    return float(found.group(1)) * (1024 if found.group(2) == "GiB" else 1)


@pytest.mark.parametrize("where", ["repo/big.bin", "/tmp/big.bin", "/root/big.bin", "/tmp/swe-residual/big.bin"],
                         ids=["repository", "tmp", "root", "scratch-tmpfs"])
def test_writing_past_storage_mb_is_the_agents_failure_disk_limit(setup, where: str) -> None:
    target = where.removeprefix("repo/")  # relative: in the repository (the workdir)
    record = _run(setup, WRITE_1G.format(path=target) + "; sleep 30")
    assert (record["outcome"], record["termination"]) == ("failure", "disk_limit"), record["attempts"]
    assert len(record["attempts"]) == 1 and record["attempts"][0]["outcome"] == "failure"
    assert record["error"] is None
    message = record["message"]
    assert f"limit {LIMIT_MB} MiB" in message and "storage_mb" in message
    written = _written_mib(message)
    # Stopped at the limit, long before the 1 GiB was written (a tmpfs write fails at its size);
    # measured 3.5-5 MiB over the limit on an idle machine, the bound leaves room for a busy one.
    assert LIMIT_MB <= written < 512, message
    # Stopped at once: not after the command's own `sleep 30` (nor the 60 s budget).
    assert record["durations"]["agent_sec"] < 25, record["durations"]
    account = record["disk_limit"]
    assert account["storage_mb"] == LIMIT_MB and account["exceeded"] is True
    assert account["enforcement"] == "watched" and account["peak_bytes"] >= LIMIT_MB * MIB
    assert "upper directory" in account["how"]  # this engine's host is this machine: read from it


def test_an_agent_writing_under_its_limit_is_unaffected(setup) -> None:
    solve = f"cat > calc.py <<'EOF'\n{SOLVED_SOURCE}EOF\n"
    record = _run(setup, "head -c 16M /dev/zero > /root/cache.bin && head -c 16M /dev/zero > /tmp/swe-residual/x "
                         "&& rm /tmp/swe-residual/x && " + solve)
    assert (record["outcome"], record["termination"], record["reward"]) == ("success", "submitted", 1.0), record
    account = record["disk_limit"]
    assert account["exceeded"] is False and account["readings"] >= 1
    assert 16 * MIB <= account["peak_bytes"] < LIMIT_MB * MIB


def test_the_engine_is_asked_once_whether_it_bounds_the_writable_layer(setup) -> None:
    task, backend, _, _ = setup
    image = backend.task_image(task).image_id
    supported, answer = disk.storage_opt_support(backend.client, image, {LABEL: "1"})
    driver = backend.client.api.info().get("Driver")
    if driver == "fuse-overlayfs":
        assert (supported, answer) == (False, "--storage-opt is not supported")
    assert backend.storage_quota(image) is supported
    assert backend._storage_opt == (supported, answer)  # remembered: asked once per engine


def test_the_engines_size_measures_the_writes_where_its_host_is_out_of_sight(setup, monkeypatch) -> None:
    """The fallback for a remote engine, forced here (this engine's host is this machine)."""
    task, backend, options, run_id = setup
    environment = backend.start(task, None, StartSpec(run_id, "disk-fallback", 1))
    try:
        environment.exec("head -c 20M /dev/zero > /root/a && head -c 8M /dev/zero > /tmp/swe-residual/b")
        monkeypatch.setattr(disk, "_host_view", lambda *args: None)
        meter = environment.disk_meter()
        assert not isinstance(meter, str) and "SizeRw" in meter.how
        assert 28 * MIB <= meter.measure() < 40 * MIB
        monkeypatch.undo()
        on_host = environment.disk_meter()
        assert not isinstance(on_host, str) and "upper directory" in on_host.how
        assert 28 * MIB <= on_host.measure() < 40 * MIB
    finally:
        environment.close()
    assert containers_of(run_id) == []
