"""The images the run's items ran on, for the summary (``summary["infra"]["images"]``; the
report's section is `IMAGES_SECTION`, swe_residual/report/sections.py).

Every record of the docker backend names its image (`image`: reference, origin, id, the public
image a stand-in replaces); this lists each image once with the tasks that used it, so a reader
of the summary knows which figures were measured on stand-ins rather than published images.
"""

from __future__ import annotations

from collections.abc import Sequence

from swe_residual.metrics.summary.model import ImageUse
from swe_residual.trial.record_model import RunRecord


def image_summary(records: Sequence[RunRecord]) -> tuple[ImageUse, ...]:
    """Each (reference, image id) the records name, with its origin and the tasks that used it."""
    found: dict[tuple[str, str], ImageUse] = {}
    tasks: dict[tuple[str, str], set[str]] = {}
    for record in records:
        image = record.image
        if image is None:
            continue
        key = (image.reference, image.image_id)
        found.setdefault(key, ImageUse(reference=image.reference, origin=image.origin, image_id=image.image_id,
                                       digest=image.digest, stands_in_for=image.stands_in_for, how=image.how))
        tasks.setdefault(key, set()).add(str(record.task))
    return tuple(entry.model_copy(update={"tasks": tuple(sorted(tasks[key]))}) for key, entry in sorted(found.items()))


def stand_ins(images: Sequence[ImageUse]) -> list[ImageUse]:
    """The images that are (or were built on) stand-ins."""
    return [image for image in images if image.stands_in_for]
