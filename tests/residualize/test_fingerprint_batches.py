"""Stage IV's fingerprint of a replayed container, on the real engine: described in a handful of
processes (GNU xargs over the listing), it equals the one-process-loop-per-path description for
every kind of path (file, empty file, directory, link, a name with a backslash or a space), and
thousands of paths take seconds, not the minutes a loop per path took. Where the image has no
`ps` (the official python:*-slim images, and their stand-ins, have no procps), the processes are
read from /proc: the same ones."""

from __future__ import annotations

import io
import sys
import tarfile
import time
from collections.abc import Iterator
from typing import Any

import docker
import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse

from swe_residual.environments.docker import LABEL
from swe_residual.environments.docker.base_image import BASE_IMAGE, ensure_base_image
from swe_residual.residualize import fidelity
from swe_residual.residualize.fidelity import changed_paths, fingerprint

pytestmark = [*requires_docker, pytest.mark.slow]

MADE = (
    "mkdir -p /app/many /app/d && for i in $(seq 1 150); do echo $i > /app/many/f$i; done"
    " && : > /app/empty && printf 'x' > '/app/back\\slash' && echo s > '/app/with space'"
    " && ln -s /app/empty /app/link && ln -s /nowhere /app/dangling && chmod 600 /app/empty"
)


class _Container:
    """The two calls fingerprint() makes of an environment, on a plain container of the engine."""

    def __init__(self, client: docker.DockerClient, container: Any) -> None:
        self.client, self.container, self.container_id = client, container, container.id

    def write_file(self, path: str, data: bytes) -> None:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            info = tarfile.TarInfo(path.rsplit("/", 1)[1])
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        self.container.put_archive(path.rsplit("/", 1)[0] or "/", buffer.getvalue())

    def exec(self, command: str, timeout_sec: float) -> Any:
        result = self.container.exec_run(["sh", "-c", command])
        return type("Result", (), {"exit_code": result.exit_code, "stdout": result.output.decode()})


@pytest.fixture(scope="module")
def container() -> Iterator[_Container]:
    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    client = docker.from_env()
    started = client.containers.run(BASE_IMAGE, ["sleep", "600"], detach=True, labels={LABEL: "1", f"{LABEL}.test": "fingerprint"})
    try:
        assert started.exec_run(["sh", "-c", MADE]).exit_code == 0
        yield _Container(client, started)
    finally:
        started.remove(force=True)


def test_batches_describe_every_path_as_the_loop_does(container: _Container) -> None:
    began = time.monotonic()
    batched = fingerprint(container)
    batched_sec = time.monotonic() - began
    present = sorted(path for path, kind in changed_paths(container).items() if kind != "deleted")
    looped = fidelity._described_one_by_one(container, present)
    assert len(present) > 150
    assert {path: batched.files[path] for path in looped} == looped and set(batched.files) >= set(looped)
    assert batched.files["/app/empty"][:2] == ("file", "600") and batched.files["/app/many"][0] == "dir"
    assert batched.files["/app/back\\slash"][0] == "file" and batched.files["/app/with space"][0] == "file"
    assert batched.files["/app/link"][0] == "link" and batched.files["/app/dangling"][0] == "link"
    assert batched.files["/app/link"][2] != batched.files["/app/dangling"][2]
    print(f"fingerprint of {len(present)} paths: {batched_sec:.1f} s in batches")


def test_a_loops_short_lived_children_are_not_the_states_processes(container: _Container) -> None:
    # A ticker left running, as a predecessor's keys can leave one: its `date` and `sleep 0.1`
    # come and go, and which one a listing catches is chance (two replays once differed on just
    # that). The loop's shell and a long-lived process are the state's, listed every time.
    loop = "while true; do date +%s%N > /tmp/tick; sleep 0.1; done"
    container.container.exec_run(["sh", "-c", loop], detach=True)
    container.container.exec_run(["sleep", "900"], detach=True)
    listings = [fidelity.lasting_processes(container) for _ in range(3)]
    assert listings[0] == listings[1] == listings[2], listings
    assert f"sh -c {loop}" in listings[0] and "sleep 900" in listings[0] and "sleep 600" in listings[0]
    assert not any(args in ("sleep 0.1", "date +%s%N") for args in listings[0]), listings[0]


def test_without_ps_the_processes_are_read_from_proc(container: _Container) -> None:
    """The listing with `ps`, then with it moved aside (as in a slim image): the same lasting
    processes, each of the same age (the /proc listing's own shell left out as `ps` is; the
    earlier test's ticker still runs, its short-lived children in neither)."""
    container.container.exec_run(["sh", "-c", "sleep 700 & sleep 701"], detach=True)
    time.sleep(LASTING)
    with_ps = (fidelity.lasting_processes(container), fidelity._aged(container))
    assert container.container.exec_run(["mv", "/usr/bin/ps", "/usr/bin/ps.aside"]).exit_code == 0
    try:
        assert container.container.exec_run(["sh", "-c", "command -v ps"]).exit_code != 0
        from_proc = (fidelity.lasting_processes(container), fidelity._aged(container))
    finally:
        container.container.exec_run(["mv", "/usr/bin/ps.aside", "/usr/bin/ps"])
    assert from_proc[0] == with_ps[0] and "sleep 701" in from_proc[0], (from_proc[0], with_ps[0])
    lasting = {pid: age for pid, (age, args) in with_ps[1].items() if age is not None and age >= LASTING}
    assert len(lasting) >= 4, with_ps[1]
    for pid, age in lasting.items():
        found = from_proc[1].get(pid)
        assert found is not None and found[1] == with_ps[1][pid][1], (pid, found, with_ps[1][pid])
        assert found[0] is not None and 0 <= found[0] - age <= LASTING + 2, (pid, found, with_ps[1][pid])


LASTING = fidelity.LASTING_SEC
