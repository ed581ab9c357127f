"""Agents' names in a terminal table's first column: short, and still told apart.

Cutting every name at its 32nd character made two `cmd:` agents under one directory
(`cmd:/home/ci/agents/first.sh`, `cmd:/home/ci/agents/second.sh`) the same cell. A name that
fits is shown whole; the others keep their end (where agent specs differ: the script, the
model), else their start and end around an ellipsis; when no cut of that width tells every
agent apart, the names are shown whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

ELLIPSIS = "..."


def _cuts(name: str, width: int) -> list[str]:
    """The ways to show `name` in `width` characters, the preferred first."""
    if len(name) <= width:
        return [name]
    room = width - len(ELLIPSIS)
    # the end kept; then the start and end, from a short head to a long one
    return [ELLIPSIS + name[-room:]] + [name[:head] + ELLIPSIS + name[-(room - head):] for head in range(4, room - 3)]


def distinct_names(names: Iterable[str], width: int) -> dict[str, str]:
    """name -> what the table shows, each at most `width` characters when that keeps them apart."""
    unique: Sequence[str] = list(dict.fromkeys(names))
    shown: dict[str, str] = {}
    for name in unique:
        others = [other for other in unique if other != name]
        for cut in _cuts(name, width):
            if not any(cut in _cuts(other, width) for other in others):
                shown[name] = cut
                break
        else:
            shown[name] = name
    if len(set(shown.values())) < len(shown):
        return {name: name for name in unique}
    return shown
