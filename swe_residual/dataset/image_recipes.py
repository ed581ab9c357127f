"""Local build recipes for the images a dataset's tasks name (`images.toml` at the dataset root).

Nothing can be pulled on these machines, so a task that names a prebuilt image in
`[environment] docker_image` (or `[verifier.environment] docker_image`) may ship, at the root
of its dataset, how to build it:

    [images."swe-residual-sample/tinylib:1.0"]
    context = "tinylib/environment"     # relative to the dataset root (the file's directory)
    dockerfile = "Dockerfile"           # relative to the context (the default)

`find_recipe(task, image)` reads `images.toml` in the task directory's parent; the docker
backend builds the image from the recipe and tags it with the name when it is absent locally.
A malformed file is a `DatasetError` naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.task import Task, read_toml

IMAGES_FILE = "images.toml"
DEFAULT_DOCKERFILE = "Dockerfile"


@dataclass(frozen=True)
class ImageRecipe:
    name: str  # the image reference the task names, used as the tag
    context: Path  # the build context directory
    dockerfile: Path  # the Dockerfile (inside the context)
    source: Path  # the images.toml it came from


def _relative(path: Path, value: Any, where: str) -> PurePosixPath:
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(path, f"expected a non-empty relative path, got {value!r}", field=where)
    relative = PurePosixPath(value)
    if relative.is_absolute() or ".." in relative.parts or "\\" in value:
        raise DatasetError(path, f"must be a relative path without '..', got {value!r}", field=where)
    return relative


def load_recipes(path: Path) -> dict[str, ImageRecipe]:
    """Every recipe of one images.toml, validated (the context and Dockerfile must exist)."""
    path = Path(path)
    data = read_toml(path)
    unknown = sorted(set(data) - {"images"})
    if unknown:
        raise DatasetError(path, "unknown top-level key (only [images.\"<name>\"] tables)", field=unknown[0])
    images = data.get("images", {})
    if not isinstance(images, dict):
        raise DatasetError(path, "must be a table of image names", field="images")
    root = path.parent.resolve()
    recipes = {}
    for name, entry in images.items():
        where = f'images."{name}"'
        if not name.strip() or any(c.isspace() for c in name):
            raise DatasetError(path, f"not an image reference: {name!r}", field=where)
        if not isinstance(entry, dict):
            raise DatasetError(path, "must be a table with `context` (and optionally `dockerfile`)", field=where)
        extra = sorted(set(entry) - {"context", "dockerfile"})
        if extra:
            raise DatasetError(path, f"unknown key {extra[0]!r} (context, dockerfile)", field=f"{where}.{extra[0]}")
        if "context" not in entry:
            raise DatasetError(path, "missing (the build context, relative to the dataset root)", field=f"{where}.context")
        context = (root / _relative(path, entry["context"], f"{where}.context")).resolve()
        dockerfile = (context / _relative(path, entry.get("dockerfile", DEFAULT_DOCKERFILE), f"{where}.dockerfile"))
        dockerfile = dockerfile.resolve()
        if not context.is_relative_to(root):
            raise DatasetError(path, f"{context} is outside the dataset", field=f"{where}.context")
        if not context.is_dir():
            raise DatasetError(path, f"build context {context} is not a directory", field=f"{where}.context")
        if not dockerfile.is_relative_to(context):
            raise DatasetError(path, f"{dockerfile} is outside the build context", field=f"{where}.dockerfile")
        if not dockerfile.is_file():
            raise DatasetError(path, f"{dockerfile} does not exist", field=f"{where}.dockerfile")
        recipes[name] = ImageRecipe(name=name, context=context, dockerfile=dockerfile, source=path)
    return recipes


def find_recipe(task: Task, image: str) -> ImageRecipe | None:
    """How to build `image` locally, from images.toml beside the task directory; None if no
    such file or no recipe for this image."""
    path = task.path.parent / IMAGES_FILE
    if not path.is_file():
        return None
    return load_recipes(path).get(image)
