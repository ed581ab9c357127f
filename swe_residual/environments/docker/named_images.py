"""Images a task names (`[environment] docker_image`, `[verifier.environment] docker_image`).

Nothing can be pulled on these machines. A recipe in the dataset's `images.toml`
(swe_residual/dataset/image_recipes.py) is authoritative: the image is built from it by content (cached
like a task image) and tagged with the name the task uses. Without a recipe the image must
already be on the engine; when it is not, one clear error names the task's file and field and
says how to provide it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docker.utils import parse_repository_tag

from swe_residual.environments.docker.engine import ENGINE_EXCEPTIONS, infra_error, inspect_image
from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.image_recipes import IMAGES_FILE, find_recipe
from swe_residual.dataset.task import Task

if TYPE_CHECKING:
    from swe_residual.environments.docker.orchestrator import Orchestrator

NAMED_REPO = "swe-residual-named"


def named_image_id(backend: Orchestrator, task: Task, reference: str, *, field: str) -> str:
    """Id of the image `reference`, built from the dataset's recipe when it has one."""
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
        return image_id
    found = inspect_image(backend.client, reference)
    if found is None:
        raise DatasetError(
            task.path / "task.toml",
            f"image {reference!r} is not on this engine and nothing can be pulled here: load it "
            f"(`docker load -i FILE`), tag a local image with that name (`docker tag LOCAL {reference}`), "
            f"or add a recipe for it to the dataset's {IMAGES_FILE}",
            field=field,
        )
    image_id: str = found["Id"]
    return image_id


def ensure_dockerfile_bases(backend: Orchestrator, task: Task, bases: list[str], *, field: str) -> None:
    """Make sure the images a Dockerfile starts FROM that the dataset has recipes for exist."""
    for base in bases:
        if find_recipe(task, base) is not None:
            named_image_id(backend, task, base, field=field)
