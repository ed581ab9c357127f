"""The Ubuntu releases whose public image (`ubuntu:24.04`) the suite can stand in for, by name.

Kept apart from ubuntu_image.py, which makes the stand-in, so that the rebuild of a task
(rebuild.py) can tell an Ubuntu FROM without importing the image machinery.
"""

from __future__ import annotations

from dataclasses import dataclass

# Ubuntu's version numbers and their code names: the releases a stand-in can be made of.
UBUNTU_RELEASES = {"24.04": "noble", "22.04": "jammy"}


@dataclass(frozen=True)
class UbuntuImage:
    """A public `ubuntu:` image the suite can stand in for."""

    reference: str  # as the Dockerfile names it, `ubuntu:24.04`
    release: str  # its code name, `noble`

    @property
    def build_command(self) -> str:
        return f"swe-residual build-base --release {self.release} --mirror URL"


def ubuntu_release(reference: str) -> UbuntuImage | None:
    """The Ubuntu release a public `ubuntu:` image names (`ubuntu:24.04`, `ubuntu:noble`), or None."""
    name = reference.split("@", 1)[0].removeprefix("docker.io/").removeprefix("library/")
    repository, _, tag = name.partition(":")
    if repository != "ubuntu":
        return None
    tag = tag or "latest"
    if tag in UBUNTU_RELEASES:
        return UbuntuImage(f"ubuntu:{tag}", UBUNTU_RELEASES[tag])
    word = tag.split("-", 1)[0]
    if word in UBUNTU_RELEASES.values():
        return UbuntuImage(f"ubuntu:{tag}", word)
    return None
