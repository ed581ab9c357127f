"""Task images: built from a Dockerfile, tagged by content hash, built once per machine.

`build_image` is the general helper: a Dockerfile and its context directory become
`<repo>:<name>-<hash>`, where the hash covers every file of the context (paths, executable
bits, bytes), the Dockerfile and the ids of the images it starts FROM. A second call reuses
the tag; any change makes a new tag and a build. Builds hold a file lock under the cache
directory, so xdist workers and parallel runs build once. The images a Dockerfile starts FROM
are got first (public_images.py: the engine's, else pulled once per engine, else a labelled
stand-in where no registry answers), then the engine's classic builder is used through the API
(it uses those local images as they are); a failed build removes the untagged layers it made
and raises InfraError with the end of its log.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
from filelock import FileLock

from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, infra_error, inspect_image, remove_images
from swe_residual.environments.docker.hygiene import LABEL
from swe_residual.environments.cache import tree_digest
from swe_residual.dataset.errors import DatasetError, InfraError
from swe_residual.environments.docker.base_image import BASE_IMAGE, ensure_base_image
from swe_residual.environments.docker.public_images import public_image
from swe_residual.environments.docker.pulls import ImageSource
from swe_residual.dataset.task import Task
from swe_residual.dataset.values import Track

TASK_REPO = "swe-residual-task"
STATE_REPO = "swe-residual-state"
SETUP_REPO = "swe-residual-agent"  # agent set-up layers (agent_setup.py)
Progress = Callable[[str], None]


@dataclass(frozen=True)
class PreparedImage:
    """A task's image, ready to start from."""

    reference: str  # tag or docker_image as written
    image_id: str
    head: str | None  # git HEAD at the workdir (the base commit), None without a repository
    workdir: str = "/"  # where commands run: [metadata] workdir, else the image's WORKDIR
    source: ImageSource | None = None  # how the task image was got (the run record's `image`)


_ARG = re.compile(r"^\s*ARG\s+(?P<name>\w+)(?:\s*=\s*(?P<value>\S+))?", re.IGNORECASE)
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(?P<image>\S+)(?:\s+AS\s+(?P<alias>\S+))?", re.IGNORECASE)
_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")
# The classic builder reports each step's resulting image as " ---> <short id>".
_STEP_IMAGE = re.compile(r"^ ---> ([0-9a-f]{12})\s*$")


def slug(text: str, limit: int) -> str:
    """A string usable in image tags and container names."""
    made = re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-.")
    return made[:limit].rstrip("-.") or "x"


def dockerfile_bases(text: str) -> list[str]:
    """The images a Dockerfile starts FROM (ARG defaults substituted, stage aliases skipped)."""
    args: dict[str, str] = {}
    aliases: set[str] = set()
    bases: list[str] = []
    for line in text.splitlines():
        if match := _ARG.match(line):
            args.setdefault(match["name"], (match["value"] or "").strip("\"'"))
        elif match := _FROM.match(line):
            image = _VARIABLE.sub(lambda m: args.get(m[1] or m[3]) or (m[2] or ""), match["image"])
            if image.lower() != "scratch" and image not in aliases:
                bases.append(image)
            if match["alias"]:
                aliases.add(match["alias"])
    return bases


def base_image_ids(client: docker.DockerClient, dockerfile: Path, progress: Progress) -> list[str]:
    """Ids of the images `dockerfile` starts FROM: our own base image built when missing, any
    other got as public_images.py says (local, pulled, or a stand-in where no registry answers)."""
    ids = []
    for base in dockerfile_bases(dockerfile.read_text(encoding="utf-8", errors="replace")):
        if base.split(":")[0] == BASE_IMAGE.split(":")[0]:
            if base != BASE_IMAGE:
                raise DatasetError(dockerfile, f"unknown swe-residual base image {base!r} (only {BASE_IMAGE})")
            ids.append(ensure_base_image(progress=progress, report_current=False, client=client))
            continue
        ids.append(public_image(client, base, where=dockerfile, field="FROM", progress=progress).image_id)
    return ids


def build_image(
    client: docker.DockerClient, context_dir: Path, dockerfile: Path, *, repo: str, name: str,
    timeout_sec: float, lock_dir: Path, progress: Progress,
) -> tuple[str, str]:
    """Build `dockerfile` with `context_dir` as context into `<repo>:<name>-<hash>`, once per
    machine; returns (tag, image id)."""
    context_dir, dockerfile = context_dir.resolve(), dockerfile.resolve()
    parts = [tree_digest(context_dir), *base_image_ids(client, dockerfile, progress)]
    if not dockerfile.is_relative_to(context_dir):
        parts.append(hashlib.sha256(dockerfile.read_bytes()).hexdigest())  # not covered by the context
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
    tag = f"{repo}:{slug(name, 100)}-{digest}"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock_dir / f"{slug(tag, 200)}.lock")):
        found = inspect_image(client, tag)
        if found is None:
            progress(f"building {tag} from {dockerfile}")
            started = time.monotonic()
            _build(client, context_dir, dockerfile, tag, timeout_sec)
            found = inspect_image(client, tag)
            if found is None:
                raise InfraError(f"{tag} is missing right after its build", stage="build")
            progress(f"built {tag} in {time.monotonic() - started:.1f}s")
    return tag, found["Id"]


def _build(client: docker.DockerClient, context_dir: Path, dockerfile: Path, tag: str, timeout_sec: float) -> None:
    # No `labels`: the classic builder would add a LABEL step (one more container and commit,
    # seconds on fuse-overlayfs); the repository name marks our images.
    relative = os.path.relpath(dockerfile, context_dir) if dockerfile.is_relative_to(context_dir) else str(dockerfile)
    made: list[str] = []  # the step images this build reported, to clean up after a failure
    log: list[str] = []
    error = ""
    deadline = time.monotonic() + timeout_sec
    try:
        stream = client.api.build(path=str(context_dir), dockerfile=relative, tag=tag, rm=True, forcerm=True,
                                  decode=True, timeout=max(1, int(timeout_sec)))
        for chunk in stream:
            text = str(chunk.get("stream") or "")
            log.append(text)
            for line in text.splitlines():
                if match := _STEP_IMAGE.match(line):
                    made.append(match[1])
            if "error" in chunk:
                error = str(chunk.get("error") or "")
            if time.monotonic() > deadline:
                error = f"the build took longer than {timeout_sec:.0f}s"
                break
    except ENGINE_EXCEPTIONS as exc:
        _remove_unused(client, made)
        raise infra_error(exc, f"building {dockerfile}", stage="build") from exc
    if error:
        _remove_unused(client, made)
        tail = "".join(log).strip()[-3000:]
        raise InfraError(f"building {dockerfile} failed: {error}\n{tail}", stage="build")


def _remove_unused(client: docker.DockerClient, short_ids: list[str]) -> None:
    """Remove the untagged, childless images among a failed build's steps (its last good layer;
    the engine removes their untagged parents with them), so nothing is left dangling."""
    if not short_ids:
        return
    dangling = client.api.images(filters={"dangling": True}, quiet=True)
    ours = [image for image in dangling if image.split(":")[-1][:12] in set(short_ids)]
    remove_images(client, ours)


def image_head(
    client: docker.DockerClient, task: Task, image_id: str, workdir: str, cache_dir: Path, labels: dict[str, str],
) -> str | None:
    """git HEAD at `workdir` of an image (the task's working directory in it), cached on disk
    by image id."""
    record = cache_dir / "heads" / f"{image_id.split(':')[-1]}-{slug(workdir, 60)}.txt"
    if record.is_file():
        return record.read_text().strip() or None
    try:
        output = client.containers.run(
            image_id, ["-c", "safe.directory=*", "-C", workdir, "rev-parse", "HEAD"], entrypoint="git",
            network_mode="none", labels=labels, remove=True, stdout=True, stderr=False,
        )
        head = output.decode().strip()
        failure = ""
    except docker.errors.ContainerError as exc:
        head, failure = "", (exc.stderr or b"").decode(errors="replace").strip()[-300:]
    except docker.errors.APIError as exc:
        if exc.status_code != 400:
            raise infra_error(exc, f"starting {image_id[:19]} to read its base commit") from exc
        # The engine refused to start git at all (a slim image has none): no repository. The
        # created container carries the backend's labels and goes when the backend closes.
        head, failure = "", "the image has no git"
    except ENGINE_EXCEPTIONS as exc:
        raise infra_error(exc, f"starting {image_id[:19]} to read its base commit") from exc
    if not head and task.track == Track.REPO:
        raise DatasetError(task.path / "task.toml",
                           f"the environment image has no git repository at {workdir}: {failure}",
                           field="metadata.workdir")
    record.parent.mkdir(parents=True, exist_ok=True)
    partial = record.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(head)
    partial.replace(record)
    return head or None


def remove_cached_images(task_id: str | None = None, client: docker.DockerClient | None = None) -> list[str]:
    """Remove the cached state snapshots, agent set-up layers and task images (of one task, or
    all); returns the tags."""
    from swe_residual.environments.docker.engine import default_client

    client = client or default_client()

    def tags(repo: str, label: str | None = None) -> list[str]:
        filters: dict[str, Any] = {"reference": repo}
        if label:
            filters["label"] = label
        return [tag for image in client.api.images(filters=filters) for tag in image.get("RepoTags") or []
                if tag.startswith(repo + ":")]

    # Snapshots first (they sit on the task images); they carry their task as a label.
    states = tags(STATE_REPO, f"{LABEL}.task={task_id}" if task_id else None)
    states += tags(SETUP_REPO, f"{LABEL}.task={task_id}" if task_id else None)  # under the snapshots, on the task image
    own_task = re.compile(rf"^{TASK_REPO}:{re.escape(slug(task_id, 100))}-[0-9a-f]{{16}}$" if task_id else ".")
    task_images = [tag for tag in tags(TASK_REPO) if own_task.match(tag)]
    remove_images(client, states)
    remove_images(client, task_images)
    return states + task_images
