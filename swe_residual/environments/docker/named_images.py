"""Images a task names (`[environment] docker_image`, `[verifier.environment] docker_image`),
got as Harbor gets them.

In order: a recipe in the dataset's `images.toml` (swe_residual/dataset/image_recipes.py) is
authoritative: the image is built from it by content (cached like a task image) and tagged with
the name the task uses. Else the engine's own image of that name, when it is not a stand-in.
Else the engine pulls it (pulls.py: once per image per engine, the engine's credentials). Where
no registry answers, the offline route: the task's own environment/Dockerfile built with its
FROM replaced by a stand-in base (rebuild.py), tagged with the name and labelled a stand-in; a
stand-in already there is used (and replaced by the real image once a registry answers). A
registry that refuses (no such tag, denied, rate limited) is one clear error naming the task's
file, the field and the registry's answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

import docker

from docker.utils import parse_repository_tag
from filelock import FileLock

from swe_residual.dataset.errors import DatasetError, InfraError
from swe_residual.dataset.image_recipes import find_recipe
from swe_residual.dataset.task import Task
from swe_residual.environments.docker.base_image import engine_key_of, ensure_base_image
from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, infra_error, inspect_image
from swe_residual.environments.docker.images import dockerfile_bases
from swe_residual.environments.docker.public_images import offline_error, refused_error
from swe_residual.environments.docker.pulls import (
    LOCAL, PULLED, RECIPE, STAND_IN, STAND_IN_HOW_LABEL, ImageSource, PullRefused,
    RegistryUnreachable, pull_image, source_of, stand_in_of,
)
from swe_residual.environments.docker.python_image import ensure_python_image
from swe_residual.environments.docker.ubuntu_image import ensure_ubuntu_image
from swe_residual.environments.docker.rebuild import (
    DEFAULT_RELEASE, UVX_PYTHON_RELEASE, UVX_PYTHON_VERSION, Plan, RebuildError, make_plan, rebuild_image, stand_in_how,
)

if TYPE_CHECKING:
    from swe_residual.environments.docker.orchestrator import Orchestrator

NAMED_REPO = "swe-residual-named"
ENVIRONMENT_FIELD = "environment.docker_image"


def named_image_id(backend: Orchestrator, task: Task, reference: str, *, field: str) -> str:
    """Id of the image `reference` (see `named_image`)."""
    return named_image(backend, task, reference, field=field).image_id


def named_image(backend: Orchestrator, task: Task, reference: str, *, field: str) -> ImageSource:
    """The image `reference` a task names in `field`, and how it was got."""
    recipe = find_recipe(task, reference)
    if recipe is not None:
        _, image_id = backend.build_image(recipe.context, recipe.dockerfile, repo=NAMED_REPO, name=reference,
                                          timeout_sec=task.config.build_timeout_sec)
        repository, tag = parse_repository_tag(reference)
        try:
            # Tagging is idempotent: xdist workers may all do it.
            backend.client.api.tag(image_id, repository, tag or "latest", force=True)
        except ENGINE_EXCEPTIONS as exc:
            raise infra_error(exc, f"tagging {image_id[:19]} as {reference}", stage="build") from exc
        found = inspect_image(backend.client, image_id)
        return source_of(found, reference, RECIPE) if found else ImageSource(reference, RECIPE, image_id)
    client = backend.client
    where = task.path / "task.toml"
    found = inspect_image(client, reference)
    if found is not None and not stand_in_of(found):
        return source_of(found, reference, LOCAL)
    try:
        pulled = pull_image(client, reference, engine_key=engine_key_of(client), lock_dir=backend.cache_dir,
                            progress=backend.progress, replace_stand_in=True)
        return source_of(pulled, reference, PULLED)
    except PullRefused as exc:
        if found is not None:
            backend.progress(f"{reference}: the registry has no such image ({exc.answer[:200]}); the stand-in stays")
            return source_of(found, reference, STAND_IN)
        raise refused_error(where, field, reference, exc.answer) from exc
    except RegistryUnreachable as exc:
        answer = exc.answer
    if found is not None:
        return source_of(found, reference, STAND_IN)
    if field != ENVIRONMENT_FIELD:
        raise offline_error(where, field, reference, answer, "the suite builds a stand-in only for the task's "
                            "[environment] docker_image (from environment/Dockerfile); --force-build builds "
                            "tests/Dockerfile instead")
    return _task_stand_in(backend, task, reference, answer)


def _task_stand_in(backend: Orchestrator, task: Task, reference: str, answer: str) -> ImageSource:
    """The task's environment/Dockerfile with its FROM replaced by a stand-in base, tagged
    `reference` and labelled a stand-in for it (one build per engine: a file lock)."""
    where = task.path / "task.toml"
    if not (task.environment_dir / "Dockerfile").is_file():
        raise offline_error(where, ENVIRONMENT_FIELD, reference, answer,
                            "and the task has no environment/Dockerfile to build a stand-in from")
    key = hashlib.sha256(f"{engine_key_of(backend.client)}\0{reference}".encode()).hexdigest()[:24]
    with FileLock(str(backend.cache_dir / f"stand-in-{key}.lock")):
        made = inspect_image(backend.client, reference)  # another worker may have built it meanwhile
        if made is not None and stand_in_of(made):
            return source_of(made, reference, STAND_IN)
        try:
            plan = ubuntu_or_debian_plan(backend, task)
            if plan.stand_in.ubuntu:
                if plan.uvx_specs:  # test.sh's uvx Python
                    ensure_python_image(UVX_PYTHON_VERSION, release=UVX_PYTHON_RELEASE, progress=backend.progress)
            elif plan.stand_in.python_build:
                ensure_python_image(plan.stand_in.python_build, release=plan.stand_in.release, progress=backend.progress)
            else:
                ensure_base_image(release=plan.stand_in.release, progress=backend.progress, report_current=False,
                                  client=backend.client)
            how = stand_in_how(plan)
            backend.progress(f"no registry answers for {reference} ({answer[:200]}): building a stand-in: {how}")
            rebuild_image(backend.client, plan, progress=backend.progress, probe=False,
                          extra_labels={"swe-residual.kind": "stand-in"})
        except RebuildError as exc:
            raise offline_error(where, ENVIRONMENT_FIELD, reference, answer,
                                f"its stand-in cannot be built from environment/Dockerfile: {exc}") from exc
        built = inspect_image(backend.client, reference)
    if built is None:
        raise DatasetError(where, f"the stand-in for {reference} is missing right after its build",
                           field=ENVIRONMENT_FIELD)
    backend.progress(f"using a stand-in for {reference}: {how}")
    return source_of(built, reference, STAND_IN)


def ubuntu_or_debian_plan(backend: Orchestrator, task: Task) -> Plan:
    """The task's rebuild plan. A task FROM ubuntu:24.04 is built on it (the engine's, pulled, else
    its stand-in); where none can be had (no registry, no stand-in made before, no Ubuntu mirror
    named or not root), on Debian bookworm as before the Ubuntu route, the reason among the
    stand-in's deviations (its label and every record say so)."""
    plan = make_plan(task.path, [])
    if not plan.stand_in.ubuntu:
        return plan
    try:
        ensure_ubuntu_image(plan.stand_in.image, progress=backend.progress, client=backend.client,
                            source=str(task.environment_dir / "Dockerfile"))
        return plan
    except InfraError as exc:
        why = str(exc).split(": ", 1)[-1][:300]
        backend.progress(f"{plan.stand_in.image} cannot be had here ({why}): Debian {DEFAULT_RELEASE} stands in for it")
        debian = make_plan(task.path, [], DEFAULT_RELEASE)
        debian.stand_in = replace(debian.stand_in, deviations=(
            *debian.stand_in.deviations, f"{plan.stand_in.image} could not be had here: {why}"))
        return debian


def ensure_dockerfile_bases(backend: Orchestrator, task: Task, bases: list[str], *, field: str) -> None:
    """Make sure the images a Dockerfile starts FROM that the dataset has recipes for exist."""
    for base in bases:
        if find_recipe(task, base) is not None:
            named_image_id(backend, task, base, field=field)


def stand_ins_in_use(client: docker.DockerClient, tasks: Iterable[Task], *, force_build: bool = False) -> dict[str, str]:
    """The stand-ins already on the engine that `tasks` would run on, said before a run starts:
    {public image: how its stand-in was made}. An image a task names, or one its Dockerfile
    starts FROM, that carries the stand-in label (read from the engine, never built here)."""
    found: dict[str, str] = {}
    for task in tasks:
        dockerfile = task.environment_dir / "Dockerfile"
        names = [task.config.docker_image] if task.config.docker_image and not (force_build and dockerfile.is_file()) \
            else dockerfile_bases(dockerfile.read_text(encoding="utf-8", errors="replace")) if dockerfile.is_file() else []
        for name in names:
            if not name or name in found:
                continue
            inspected = inspect_image(client, name)
            stands_in_for = stand_in_of(inspected)
            if inspected is not None and stands_in_for:
                labels = (inspected.get("Config") or {}).get("Labels") or {}
                found[stands_in_for if stands_in_for != name else name] = labels.get(STAND_IN_HOW_LABEL) or "built by the suite"
    return found
