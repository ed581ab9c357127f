"""What the docker backend has cached on an engine, and pruning it.

Which images are the suite's. An image is listed once per name it carries in one of the suite's
own repositories:

| repository | kind | what marks it today |
|---|---|---|
| `swe-residual-base` | base | built on `debian:RELEASE-slim` with `swe-residual.kind=base`, `swe-residual.recipe` (the Debian stand-in under it, where no registry answered, is not the suite's to prune: it carries a public name) |
| `swe-residual-python` | base | built FROM the base with `swe-residual.kind=python`, `swe-residual.recipe`, `swe-residual.python` |
| `swe-residual-task` | task | no label (builds add none: a LABEL step costs a commit) |
| `swe-residual-verifier` | verifier | no label (the same builds) |
| `swe-residual-named` | recipe | no label (the same builds); also tagged with the name its task uses |
| `swe-residual-state` | state | `swe-residual=1`, `.kind=state`, `.task`, `.state` (its commit) |
| `swe-residual-agent` | agent-setup | `swe-residual=1`, `.kind=agent-setup`, `.task`, `.script-sha` (a script's layer) or `.agent`, `.install-key` (an agent's install layer) |
| `swe-residual-tmp` | temporary | `swe-residual=1` and the owner labels (hygiene.py) |
| any other `swe-residual-*` | other-labelled | only with `swe-residual=1` |

Labels alone never make an image the suite's: an image inherits every label of the image it
starts FROM (a user's `FROM swe-residual-base:bookworm` carries `swe-residual.kind=base`) and
of the container it is committed from, so on a shared engine a label proves ancestry, not
ownership. Only the suite writes names into its own repositories, so a name there is the rule;
labels then say what the image is and for which task, where the builds write them. Untagged
images are never touched (`docker image prune` is the tool for those), nor any name outside
these repositories, except the name a dataset recipe's image was built for (see `_recipe_names`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import docker
import docker.errors
from docker.utils import parse_repository_tag

from swe_residual.environments.docker.ancestry import ImageGraph, listed_tags
from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, engine_errors, infra_error
from swe_residual.environments.docker.hygiene import LABEL, TEMP_REPO, stale_temp_images
from swe_residual.environments.docker.images import SETUP_REPO as AGENT_REPO
from swe_residual.environments.docker.images import STATE_REPO, TASK_REPO, slug
from swe_residual.environments.docker.named_images import NAMED_REPO
from swe_residual.environments.docker.verification import VERIFIER_REPO
from swe_residual.environments.docker.base_image import BASE_IMAGE
from swe_residual.environments.docker.python_image import PYTHON_REPOSITORY

BASE, TASK, STATE, AGENT_SETUP, VERIFIER, RECIPE, TEMPORARY, OTHER = (
    "base", "task", "state", "agent-setup", "verifier", "recipe", "temporary", "other-labelled")
KINDS = (BASE, RECIPE, TASK, VERIFIER, STATE, AGENT_SETUP, TEMPORARY, OTHER)  # listing order
REPOSITORIES = {
    parse_repository_tag(BASE_IMAGE)[0]: BASE, PYTHON_REPOSITORY: BASE, TASK_REPO: TASK, VERIFIER_REPO: VERIFIER, NAMED_REPO: RECIPE,
    STATE_REPO: STATE, AGENT_REPO: AGENT_SETUP, TEMP_REPO: TEMPORARY,
}
SUITE_PREFIX = "swe-residual-"
# Kinds whose images carry their own `swe-residual.task` label; the others would only show one
# inherited from the image they start FROM, so their task comes from the name.
_LABELLED_TASK = (STATE, AGENT_SETUP, TEMPORARY, OTHER)
# `<name>-<16 hex digits>`: build_image's content-hashed names (and state_tag's).
_HASHED = re.compile(r"^(?P<stem>.+)-[0-9a-f]{16}$")
_CREATED = re.compile(r"^(?P<seconds>[0-9T:-]+)(?:\.(?P<fraction>\d+))?(?P<zone>Z|[+-]\d\d:\d\d)$")


@dataclass(frozen=True)
class CachedImage:
    """One name the suite gave an image (an image with two suite names is listed twice)."""

    image_id: str
    tag: str  # the suite's name this entry is about
    tags: tuple[str, ...]  # every name of the image
    kind: str
    task: str | None  # from the image's own label, else the name (build_image slugs the task id)
    state: str | None
    size: int  # bytes, every layer down to the root as the engine counts them
    created: datetime
    # What this is a build of, told apart from its other builds only by content hash:
    # (kind, name) or (kind, task, state) or (kind, task, script digest). None: never superseded.
    series: tuple[str, ...] | None = field(default=None, compare=False)

    def as_json(self) -> dict[str, Any]:
        return {"image_id": self.image_id, "tag": self.tag, "tags": list(self.tags), "kind": self.kind,
                "task": self.task, "state": self.state, "size_bytes": self.size,
                "created": self.created.isoformat()}


@dataclass(frozen=True)
class Removal:
    image: CachedImage
    reason: str
    references: tuple[str, ...]  # the names removed: the entry's own, and a recipe's image name
    deleted: bool  # the image went with its last name; False: only the names did (still in use)


@dataclass(frozen=True)
class Kept:
    image: CachedImage
    reason: str


@dataclass(frozen=True)
class PruneResult:
    removed: tuple[Removal, ...]
    kept: tuple[Kept, ...]  # chosen for removal but protected, or refused by the engine
    freed_bytes: int
    deleted_images: int  # images deleted, intermediate build layers included
    dry_run: bool


def kind_of(tag: str, labels: dict[str, str]) -> str | None:
    """The kind of a suite image by one of its names, or None when the name is not the suite's."""
    repository, _ = parse_repository_tag(tag)
    if repository in REPOSITORIES:
        return REPOSITORIES[repository]
    if repository.startswith(SUITE_PREFIX) and labels.get(LABEL) == "1":
        return OTHER
    return None


def _series(kind: str, stem: str | None, task: str | None, labels: dict[str, str]) -> tuple[str, ...] | None:
    if kind in (TASK, VERIFIER, RECIPE):
        return (kind, stem) if stem else None
    if kind == STATE:
        state = labels.get(f"{LABEL}.state")
        return (kind, task, state) if task and state else None
    if kind == AGENT_SETUP:
        # The labels cannot tell an edited set-up script from another agent's script: only a
        # rebuild of the same script (over a rebuilt task or state image) supersedes.
        script = labels.get(f"{LABEL}.script-sha")
        return (kind, task, script) if task and script else None
    return None  # the base replaces itself (ensure_base_image); temporaries go by their owner


def _describe(entry: dict[str, Any], tag: str, kind: str) -> CachedImage:
    labels: dict[str, str] = entry.get("Labels") or {}
    hashed = _HASHED.match(parse_repository_tag(tag)[1] or "")
    stem = hashed["stem"] if hashed else None
    if kind in _LABELLED_TASK:
        task = labels.get(f"{LABEL}.task") or None
    else:
        task = stem if kind in (TASK, VERIFIER) else None
    state = (labels.get(f"{LABEL}.state") or None) if kind in (STATE, TEMPORARY) else None
    return CachedImage(
        image_id=entry["Id"], tag=tag, tags=tuple(listed_tags(entry)), kind=kind, task=task, state=state,
        size=int(entry.get("Size") or 0), created=datetime.fromtimestamp(int(entry.get("Created") or 0), UTC),
        series=_series(kind, stem, task, labels),
    )


def _matches(image: CachedImage, task: str | None) -> bool:
    return task is None or image.task in (task, slug(task, 100))


def list_suite_images(client: docker.DockerClient, *, task: str | None = None) -> list[CachedImage]:
    """Every name the suite gave an image on this engine (of one task's images with `task`)."""
    with engine_errors("listing the engine's images"):
        listed = client.api.images()
    found = []
    for entry in listed:
        labels = entry.get("Labels") or {}
        for tag in listed_tags(entry):
            kind = kind_of(tag, labels)
            if kind is not None:
                image = _describe(entry, tag, kind)
                if _matches(image, task):
                    found.append(image)
    return sorted(found, key=lambda image: (KINDS.index(image.kind), image.task or "", image.created, image.tag))


# -- pruning -----------------------------------------------------------------------------------
def prune_suite_images(
    client: docker.DockerClient, *, all_images: bool, task: str | None = None, dry_run: bool = False,
) -> PruneResult:
    """Remove what is safe to lose: without `all_images`, temporary images of dead processes
    and builds superseded by a newer build of the same thing; with it, every suite image (of
    `task`, when given). Images a container uses, and temporaries of live processes, stay."""
    images = list_suite_images(client, task=task)
    with engine_errors("listing temporary images"):
        stale = set(stale_temp_images(client, None))
    superseded = {} if all_images else _superseded(client, images)
    users = _container_users(client)
    graph = ImageGraph.load(client)
    removals: list[tuple[CachedImage, str, tuple[str, ...]]] = []
    kept: list[Kept] = []
    for image in images:
        if image.kind == TEMPORARY and image.tag not in stale:
            if all_images:  # removing it would break the build that made it a moment ago
                kept.append(Kept(image, "temporary image of a live process (or another host's): its owner removes it"))
            continue
        if image.kind == TEMPORARY:
            reason = "temporary image of a dead process"
        elif all_images:
            reason = "--all"
        elif image.tag in superseded:
            reason = f"superseded by {superseded[image.tag]}"
        else:
            continue
        if image.image_id in users:
            kept.append(Kept(image, f"used by {users[image.image_id]}"))
        else:
            removals.append((image, reason, (image.tag, *_recipe_names(image))))
    # Children first, so a parent's removal can delete it rather than only untag it.
    removals.sort(key=lambda item: (-graph.depth(item[0].image_id), item[0].tag))
    if dry_run:
        deleted = graph.deletions([name for _, _, names in removals for name in names], set(users))
        done = removals
    else:
        done, deleted = _remove(client, removals, kept)
    removed = tuple(Removal(image, reason, names, image.image_id in deleted) for image, reason, names in done)
    return PruneResult(removed=removed, kept=tuple(kept), freed_bytes=sum(graph.own_size(i) for i in deleted),
                       deleted_images=len(deleted), dry_run=dry_run)


def _superseded(client: docker.DockerClient, images: list[CachedImage]) -> dict[str, str]:
    """{name: the newest build's name} for every name of an older build of the same series.

    A content-hashed name never moves, so an edited task leaves its old build behind under the
    old name. Names on the newest build's own image are kept: removing them frees nothing.
    """
    series: dict[tuple[str, ...], list[CachedImage]] = defaultdict(list)
    for image in images:
        if image.series is not None:
            series[image.series].append(image)
    superseded: dict[str, str] = {}
    for members in series.values():
        if len({image.image_id for image in members}) < 2:
            continue
        # The listing's creation times have whole seconds; two builds can share one.
        created = {image.image_id: _created_ns(client, image.image_id) for image in members}
        present = [image for image in members if created[image.image_id] is not None]
        if not present:
            continue
        newest = max(present, key=lambda image: (created[image.image_id], image.tag))
        ties = [image for image in present if created[image.image_id] == created[newest.image_id]
                and image.image_id != newest.image_id]
        if ties:
            continue  # no newest build to keep: keep them all
        for image in present:
            if image.image_id != newest.image_id:
                superseded[image.tag] = newest.tag
    return superseded


def _created_ns(client: docker.DockerClient, image_id: str) -> int | None:
    """An image's creation time in nanoseconds, None once it is gone."""
    try:
        found = client.api.inspect_image(image_id)
    except docker.errors.NotFound:
        return None
    except ENGINE_EXCEPTIONS as exc:
        raise infra_error(exc, f"inspecting image {image_id[:19]}") from exc
    match = _CREATED.match(str(found.get("Created") or ""))
    if match is None:
        return 0
    seconds = datetime.fromisoformat(match["seconds"] + match["zone"].replace("Z", "+00:00"))
    return int(seconds.timestamp()) * 10**9 + int((match["fraction"] or "0").ljust(9, "0")[:9])


def _recipe_names(image: CachedImage) -> list[str]:
    """The name a dataset recipe's image was built for (named_images.py tags it with that name,
    and `swe-residual-named:<slug of the name>-<hash>` says so); every other name is left alone."""
    if image.kind != RECIPE or image.series is None:
        return []
    stem = image.series[1]
    names = []
    for other in image.tags:
        if kind_of(other, {}) is not None:
            continue
        bare = other.removesuffix(":latest")
        if stem in (slug(other, 100), slug(bare, 100)):
            names.append(other)
    return names


def _container_users(client: docker.DockerClient) -> dict[str, str]:
    """{image id: which container uses it}, for every container, running or not."""
    with engine_errors("listing containers"):
        listed = client.api.containers(all=True)
    users: dict[str, str] = {}
    for entry in listed:
        image_id = str(entry.get("ImageID") or "")
        name = ((entry.get("Names") or [""])[0] or entry["Id"][:12]).lstrip("/")
        state = str(entry.get("State") or "unknown")
        if not image_id or (image_id in users and state != "running"):
            continue  # one user is enough to say why; a running one says it best
        users[image_id] = f"running container {name}" if state == "running" else f"container {name} ({state})"
    return users


def _remove(
    client: docker.DockerClient, removals: list[tuple[CachedImage, str, tuple[str, ...]]], kept: list[Kept],
) -> tuple[list[tuple[CachedImage, str, tuple[str, ...]]], set[str]]:
    """Remove the names in order; returns what went and the ids of the images the engine deleted."""
    done = []
    deleted: set[str] = set()
    for image, reason, names in removals:
        gone = []
        for name in names:
            try:
                answer = client.api.remove_image(name)
            except docker.errors.NotFound:
                continue  # already gone: another cleanup got there first
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise infra_error(exc, f"removing image {name}") from exc
                # A container started since the listing, or a child image appeared.
                kept.append(Kept(image, f"the engine refused: {exc.explanation or exc}"))
                break
            except ENGINE_EXCEPTIONS as exc:
                raise infra_error(exc, f"removing image {name}") from exc
            gone.append(name)
            deleted |= {str(item["Deleted"]) for item in answer or [] if item.get("Deleted")}
        if gone:
            done.append((image, reason, tuple(gone)))
    return done, deleted
