"""The engine's image ancestry: which layers an image holds alone, and what removing names frees.

The classic builder and `docker commit` record each image's parent, and an image's size counts
every layer down to its root, so an image's own layers weigh its size minus its parent's.
Removing an image's last name deletes it only when no container and no child image uses it; the
engine then deletes its untagged, childless parents as well (the intermediate images of its
build). `ImageGraph` replays that rule, so a dry run can say which images a set of removals
would delete and how many bytes that frees, and it weighs what a set of images holds on disk
with shared layers (the base image's, above all) counted once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import docker

from swe_residual.environments.docker.engine import engine_errors

# How the engine lists an image that has no name (older engines list it, newer ones omit it).
NO_TAG = "<none>:<none>"


def listed_tags(entry: dict[str, Any]) -> list[str]:
    """The names of an image in an `images` listing, without the engine's no-name placeholder."""
    return [tag for tag in entry.get("RepoTags") or [] if tag != NO_TAG]


@dataclass(frozen=True)
class Node:
    image_id: str
    parent: str | None
    size: int  # every layer down to the root, as the engine reports it
    tags: frozenset[str]


class ImageGraph:
    """Every image of an engine (intermediate ones included) with its parent and children."""

    def __init__(self, nodes: Iterable[Node]) -> None:
        self.nodes = {node.image_id: node for node in nodes}
        self.children: dict[str, set[str]] = defaultdict(set)
        for node in self.nodes.values():
            if node.parent:
                self.children[node.parent].add(node.image_id)

    @classmethod
    def load(cls, client: docker.DockerClient) -> ImageGraph:
        with engine_errors("listing the engine's images"):
            listed = client.api.images(all=True)
        return cls(Node(entry["Id"], entry.get("ParentId") or None, int(entry.get("Size") or 0),
                        frozenset(listed_tags(entry))) for entry in listed)

    def own_size(self, image_id: str) -> int:
        """Bytes of the layers `image_id` adds to its parent (all of them without a known parent)."""
        node = self.nodes.get(image_id)
        if node is None:
            return 0
        parent = self.nodes.get(node.parent) if node.parent else None
        return max(0, node.size - parent.size) if parent is not None else node.size

    def lineage(self, image_id: str) -> list[str]:
        """`image_id` and its ancestors, nearest first."""
        chain: list[str] = []
        current: str | None = image_id
        while current is not None and current in self.nodes and current not in chain:
            chain.append(current)
            current = self.nodes[current].parent
        return chain

    def depth(self, image_id: str) -> int:
        return len(self.lineage(image_id))

    def disk_bytes(self, image_ids: Iterable[str]) -> int:
        """What `image_ids` hold on disk together: their layers and their ancestors', each once."""
        held = {ancestor for image_id in image_ids for ancestor in self.lineage(image_id)}
        return sum(self.own_size(image_id) for image_id in held)

    def deletions(self, removed_tags: Iterable[str], used: set[str]) -> set[str]:
        """The images the engine deletes when `removed_tags` are removed, given the ids of the
        images containers use (which the engine never deletes)."""
        remaining = {image_id: set(node.tags) for image_id, node in self.nodes.items()}
        touched: set[str] = set()
        for tag in removed_tags:
            for image_id, tags in remaining.items():
                if tag in tags:
                    tags.discard(tag)
                    touched.add(image_id)
        deleted: set[str] = set()

        def deletable(image_id: str) -> bool:
            return (not remaining[image_id] and image_id not in used
                    and self.children.get(image_id, set()) <= deleted)

        # Children before parents: a parent goes only once every child has gone.
        for image_id in sorted(touched, key=self.depth, reverse=True):
            for current in self.lineage(image_id):
                if current in deleted:
                    continue
                if not deletable(current):
                    break
                deleted.add(current)
        return deleted
