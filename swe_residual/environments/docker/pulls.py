"""Pulling an image through the engine, once per image per engine, and what a refusal means.

The engine pulls with its own credentials (the SDK reads `~/.docker/config.json`). One file
lock per (engine, reference) under the cache directory makes xdist workers and parallel runs
pull once: the others wait, then find the image. Progress goes through the caller's progress
callback, a line now and then (a pull reports every chunk of every layer).

A failed pull is one of two kinds. `RegistryUnreachable`: no registry answered (the engine
could not resolve, connect or shake hands), so the suite may fall back to a stand-in it builds
itself. `PullRefused`: a registry answered no (no such tag, denied, rate limited), which a
stand-in must not paper over. The engine says which only in its message text (a 500 or 404
with Go's network error, or an error line in the pull's stream); this module is the one place
that reads an engine's text to tell failures apart, because the engine gives no other sign.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.utils import parse_repository_tag
from filelock import FileLock

from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, infra_error, inspect_image, remove_images

Progress = Callable[[str], None]

# Labels of an image the suite built to stand in for a public one it could not pull.
STAND_IN_LABEL = "swe-residual.stand-in"
STAND_IN_HOW_LABEL = "swe-residual.stand-in.how"
# How often a pull's progress is passed on.
PROGRESS_EVERY_SEC = 5.0

# Go's network errors as the engine words them when no registry answered at all.
_UNREACHABLE = re.compile(
    r"no such host|connection refused|i/o timeout|TLS handshake timeout|network is unreachable|no route to host"
    r"|server misbehaving|temporary failure in name resolution|Client\.Timeout exceeded|connection reset by peer"
    r"|dial tcp|dial unix",
    re.IGNORECASE,
)


class PullFailed(Exception):
    """A pull that did not give the image; `answer` is the engine's (or registry's) words."""

    def __init__(self, reference: str, answer: str) -> None:
        super().__init__(f"pulling {reference}: {answer}")
        self.reference = reference
        self.answer = answer


class RegistryUnreachable(PullFailed):
    """No registry answered: the offline route (a stand-in) may be taken."""


class PullRefused(PullFailed):
    """A registry answered and refused: no such tag, denied, unauthorized, rate limited."""


def classify(reference: str, answer: str) -> PullFailed:
    """The kind of a failed pull from the engine's words (the one place they are read)."""
    answer = answer.strip()
    if _UNREACHABLE.search(answer):
        return RegistryUnreachable(reference, answer)
    return PullRefused(reference, answer)


def stand_in_of(found: dict[str, Any] | None) -> str | None:
    """What an inspected image stands in for (its stand-in label, inherited by images built on
    it), or None for an image that is what it says."""
    if found is None:
        return None
    labels = (found.get("Config") or {}).get("Labels") or {}
    return labels.get(STAND_IN_LABEL) or None


def repo_digest(found: dict[str, Any] | None, reference: str) -> str | None:
    """The registry's digest of `reference`'s image (`name@sha256:...`) when the engine got it
    from that registry (pulled, by this run or before), else None."""
    if found is None:
        return None
    repository = parse_repository_tag(reference)[0]
    for digest in found.get("RepoDigests") or []:
        if digest.split("@", 1)[0] in (repository, f"docker.io/{repository}", f"docker.io/library/{repository}"):
            return str(digest)
    return None


def remove_if_untagged(client: docker.DockerClient, image_id: str) -> None:
    """Remove an image a name moved away from, unless another name still holds it (removing by
    id would take that name too) or images built on it remain (the engine refuses: kept)."""
    found = inspect_image(client, image_id)
    if found is not None and not found.get("RepoTags"):
        remove_images(client, [image_id])


def _lock_path(lock_dir: Path, engine_key: str, reference: str) -> Path:
    key = hashlib.sha256(f"{engine_key}\0{reference}".encode()).hexdigest()[:24]
    return lock_dir / "pulls" / f"{key}.lock"


def pull_image(client: docker.DockerClient, reference: str, *, engine_key: str, lock_dir: Path,
               progress: Progress, replace_stand_in: bool = False) -> dict[str, Any]:
    """The inspected image `reference`, pulled when the engine lacks it (or has only a stand-in
    and `replace_stand_in`); raises `RegistryUnreachable` or `PullRefused`."""
    lock = _lock_path(lock_dir, engine_key, reference)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock)):
        found = inspect_image(client, reference)  # another worker may have pulled it meanwhile
        if found is not None and not (replace_stand_in and stand_in_of(found)):
            return found
        _pull(client, reference, progress)
        replaced = found
        found = inspect_image(client, reference)
        if found is None:
            raise PullRefused(reference, "the engine reported the pull done, but has no such image")
        if replaced is not None and replaced["Id"] != found["Id"]:
            # The stand-in the real image replaced would linger untagged (kept while images built on it remain).
            remove_if_untagged(client, replaced["Id"])
        return found


def _pull(client: docker.DockerClient, reference: str, progress: Progress) -> None:
    repository, tag = parse_repository_tag(reference)
    if not tag and "@" not in reference:
        tag = "latest"
    progress(f"pulling {reference}")
    started = last = time.monotonic()
    try:
        stream = client.api.pull(repository, tag=tag, stream=True, decode=True)
        for chunk in stream:
            if "error" in chunk:
                raise classify(reference, str(chunk.get("error") or ""))
            if time.monotonic() - last >= PROGRESS_EVERY_SEC:
                last = time.monotonic()
                detail = chunk.get("progress") or ""
                progress(f"  {reference}: {chunk.get('status', '')} {chunk.get('id', '')} {detail}".rstrip())
    except docker.errors.APIError as exc:
        raise classify(reference, str(exc.explanation or exc)) from exc
    except ENGINE_EXCEPTIONS as exc:
        raise infra_error(exc, f"pulling {reference}", stage="build") from exc
    progress(f"pulled {reference} in {time.monotonic() - started:.1f}s")


# Where an image came from, as a run record says it (trial/record_model.py `ImagePart`): `local`
# is an image the engine had that came from no registry (built, loaded or tagged there); one the
# engine got from its registry, in this run or before, is `pulled` with the registry's digest.
LOCAL, PULLED, BUILT, RECIPE, STAND_IN = "local", "pulled", "built", "recipe", "stand-in"


@dataclass(frozen=True)
class ImageSource:
    """An image a start ran on and how the suite got it."""

    reference: str  # as the task names it, or the tag the suite built
    origin: str  # LOCAL, PULLED, BUILT, RECIPE or STAND_IN
    image_id: str
    digest: str | None = None  # the registry's digest of a pulled (or local, pulled before) image
    stands_in_for: str | None = None  # the public image a stand-in (or the base it was built on) replaces
    how: str | None = None  # how that stand-in was made


def source_of(found: dict[str, Any], reference: str, origin: str) -> ImageSource:
    """The `ImageSource` of an inspected image; a stand-in (or an image built on one) says so."""
    labels = (found.get("Config") or {}).get("Labels") or {}
    stands_in_for = labels.get(STAND_IN_LABEL) or None
    digest = repo_digest(found, reference) if origin in (LOCAL, PULLED) else None
    if origin in (LOCAL, PULLED) and stands_in_for == reference:
        origin = STAND_IN
    elif origin == LOCAL and digest:
        origin = PULLED  # it came from the registry (another worker's pull, or an earlier run's)
    return ImageSource(reference, origin, str(found["Id"]), digest=digest,
                       stands_in_for=stands_in_for, how=labels.get(STAND_IN_HOW_LABEL) or None)
