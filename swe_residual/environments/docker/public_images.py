"""Public images a Dockerfile starts FROM: the engine's, else pulled, else a labelled stand-in.

As Harbor's builds do, the engine fetches a Dockerfile's bases: each FROM image the engine lacks
is pulled (once per engine, pulls.py) before the build, so its id goes into the task image's
content hash. Where no registry answers, the suite builds what it knows how to build instead
and labels it a stand-in (`swe-residual.stand-in`), tagged with the public name:
- `debian:RELEASE[-slim]`: Debian's packages bootstrapped (base_image.py; needs root);
- `ubuntu:24.04`, `ubuntu:22.04`: Ubuntu's packages bootstrapped from a mirror the user gives
  (ubuntu_image.py; needs root);
- `python:X.Y-...`: the Debian release rebuild.py chooses for the tag, with CPython X.Y compiled
  from Debian's source (python_image.py) or Debian's own python3 in a venv, as the rebuild of a
  published task would give it.
Anything else offline is one clear error naming the Dockerfile and its FROM. A registry that
answers and refuses (no such tag, denied, rate limited) is one clear error too, never a stand-in.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import docker
from filelock import FileLock

from swe_residual.dataset.errors import DatasetError, InfraError
from swe_residual.dataset.image_recipes import IMAGES_FILE
from swe_residual.environments.docker.base_image import (
    _cache_dir, debian_release, engine_key_of, ensure_base_image, ensure_debian_image,
)
from swe_residual.environments.docker.engine import engine_errors, inspect_image
from swe_residual.environments.docker.pulls import (
    LOCAL, PULLED, STAND_IN, STAND_IN_HOW_LABEL, STAND_IN_LABEL, ImageSource, Progress, PullRefused,
    RegistryUnreachable, pull_image, source_of, stand_in_of,
)
from swe_residual.environments.docker.python_image import ensure_python_image
from swe_residual.environments.docker.ubuntu_image import ensure_ubuntu_image
from swe_residual.environments.docker.ubuntu_releases import ubuntu_release
from swe_residual.environments.docker.rebuild import RebuildError, label_instruction, stand_in_for, venv_path_lines

VENV = "/opt/venv"


def refused_error(where: Path, field: str, reference: str, answer: str) -> DatasetError:
    """The one error of a pull a registry refused: the file, the field, its answer, the fixes."""
    return DatasetError(
        where, f"the registry refused {reference!r}: {answer.strip()[:400]}. Check the name and tag; for a private "
        "registry log the engine in (`docker login REGISTRY`: the engine's credentials in ~/.docker/config.json "
        "are used); when rate limited, log in or retry later", field=field)


def offline_error(where: Path, field: str, reference: str, answer: str, why: str) -> DatasetError:
    """No registry answers and no stand-in can be made for `reference`."""
    return DatasetError(
        where, f"{reference!r} is not on this engine and no registry answers ({answer.strip()[:300]}); {why}. "
        f"Give the engine registry access, `docker load` the image, tag a local one (`docker tag LOCAL {reference}`), "
        f"or add a recipe for it to the dataset's {IMAGES_FILE}",
        field=field)


def public_image(client: docker.DockerClient, reference: str, *, where: Path, field: str,
                 progress: Progress) -> ImageSource:
    """`reference` on this engine: used when there (and not a stand-in), else pulled, else (no
    registry answers) its stand-in, built when the suite knows how."""
    found = inspect_image(client, reference)
    if found is not None and not stand_in_of(found):
        return source_of(found, reference, LOCAL)
    if debian_release(reference) is not None or ubuntu_release(reference) is not None:
        make = ensure_debian_image if debian_release(reference) is not None else ensure_ubuntu_image
        try:
            image_id = make(reference, progress=progress, client=client, source=str(where))
        except PullRefused as exc:
            raise refused_error(where, field, reference, exc.answer) from exc
        now = inspect_image(client, image_id)
        if now is None:
            raise InfraError(f"{reference} vanished right after it was made", stage="build")
        return source_of(now, reference, LOCAL if found is not None and not stand_in_of(now) else PULLED)
    try:
        pulled = pull_image(client, reference, engine_key=engine_key_of(client), lock_dir=_cache_dir(),
                            progress=progress, replace_stand_in=True)
        return source_of(pulled, reference, PULLED)
    except RegistryUnreachable as exc:
        if found is not None:  # a stand-in made before: kept while no registry answers
            return source_of(found, reference, STAND_IN)
        with FileLock(str(_cache_dir() / f"stand-in-{hashlib.sha256(reference.encode()).hexdigest()[:24]}.lock")):
            made = inspect_image(client, reference)  # another worker may have made it meanwhile
            if made is not None:
                return source_of(made, reference, STAND_IN)
            return _python_stand_in(client, reference, where=where, field=field, progress=progress, answer=exc.answer)
    except PullRefused as exc:
        if found is not None:
            progress(f"{reference}: the registry has no such image ({exc.answer[:200]}); the stand-in stays")
            return source_of(found, reference, STAND_IN)
        raise refused_error(where, field, reference, exc.answer) from exc


def _python_stand_in(client: docker.DockerClient, reference: str, *, where: Path, field: str, progress: Progress,
                     answer: str) -> ImageSource:
    """A stand-in for `python:X.Y...`: the base rebuild.py would put under a published task's
    Dockerfile, labelled and tagged with the public name."""
    repository = reference.split("@", 1)[0].rsplit(":", 1)[0].removeprefix("docker.io/").removeprefix("library/")
    if repository != "python":
        raise offline_error(where, field, reference, answer, "the suite builds stand-ins for debian:RELEASE and "
                            "python:X.Y images only")
    try:
        plan = stand_in_for(reference)
    except RebuildError as exc:
        raise offline_error(where, field, reference, answer, str(exc)) from exc
    if plan.python_build:
        # Its own client (the compile streams nothing for minutes): the environment's engine.
        ensure_python_image(plan.python_build, release=plan.release, progress=progress)
        how = (f"CPython {plan.python_build} compiled from Debian's source package on Debian {plan.release} "
               f"({plan.image}), without PGO/LTO")
    else:
        ensure_base_image(release=plan.release, progress=progress, client=client, report_current=False)
        how = f"Debian {plan.release}'s python3 {plan.python} in a venv at {VENV} ({plan.image})"
    lines = [f"FROM {plan.image}"]
    if plan.python_venv:
        lines += ["RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
                  "python3 python3-venv python3-pip python3-dev && rm -rf /var/lib/apt/lists/*",
                  f"RUN python3 -m venv {VENV}", *venv_path_lines(VENV)]
    deviations = "; ".join(plan.deviations)
    labels = {STAND_IN_LABEL: reference, STAND_IN_HOW_LABEL: how + (f"; {deviations}" if deviations else ""),
              "swe-residual.kind": "stand-in"}
    progress(f"no registry answers for {reference}: building its stand-in ({how})")
    with engine_errors(f"building the stand-in for {reference}", stage="build"):
        dockerfile = "\n".join([*lines, label_instruction(labels)]) + "\n"
        for chunk in client.api.build(fileobj=io.BytesIO(dockerfile.encode()), tag=reference, rm=True, forcerm=True,
                                      decode=True):
            if "error" in chunk:
                raise InfraError(f"building the stand-in for {reference} failed: {str(chunk['error']).strip()}",
                                 stage="build")
    built = inspect_image(client, reference)
    if built is None:
        raise InfraError(f"the stand-in for {reference} is missing right after its build", stage="build")
    progress(f"using a stand-in for {reference}: {how}")
    return source_of(built, reference, STAND_IN)
