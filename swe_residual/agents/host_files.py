"""Host files a `cmd:` agent names: found on the host, copied into each environment.

`--agent=cmd:./my-agent.sh` names a file where pytest runs, but the command runs inside the
environment (a container, or a workspace), where `./my-agent.sh` means nothing. So every
word of the command that names a host file is copied, read-only, into the environment's
scratch directory (`$SWE_RESIDUAL_AGENT_DIR`, outside the repository) before the agent
starts, the word is rewritten to that copy, and the copy is removed when the agent stops:
it is never in the state the verifier grades nor in the patch the metrics read.

Which words are host files: a relative path with a slash (`./run.sh`, `agents/run.py`,
`../x`) that exists below the directory pytest runs in, or an absolute path outside the
system directories that exists on the host (`/usr/bin/python3` is the environment's own).
With the agent option `upload=dir` the directory of the first host file is copied whole
(`.git` and `__pycache__` left out), for an agent made of several files.
"""

from __future__ import annotations

import hashlib
import io
import re
import shlex
import tarfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from swe_residual.dataset.errors import ConfigError

AGENT_DIR_VARIABLE = "SWE_RESIDUAL_AGENT_DIR"
AGENT_SUBDIR = "agent"  # below the environment's scratch directory
UPLOAD_MODES = ("file", "dir")
# Larger agents belong in an image layer (--agent-setup) or a mount (--agent-mount).
MAX_UPLOAD_BYTES = 64 * 1024 * 1024
SYSTEM_DIRS = ("/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/etc", "/proc", "/sys", "/dev")
SKIPPED_NAMES = {".git", "__pycache__"}
# A word as the shell sees it: not preceded or followed by anything but blanks and operators.
_WORD_EDGE_BEFORE = r"(?<![^\s;&|(])"
_WORD_EDGE_AFTER = r"(?![^\s;&|)])"


@dataclass(frozen=True)
class HostProgram:
    """A `cmd:` command with its host files: what to copy in, and the command to run."""

    command: str  # as run in the environment: host words point into $SWE_RESIDUAL_AGENT_DIR
    archive: bytes | None  # the files to extract into $SWE_RESIDUAL_AGENT_DIR (None: nothing)
    files: tuple[str, ...]  # host paths copied, for messages and the record
    # {name below $SWE_RESIDUAL_AGENT_DIR: sha256 of its bytes} of every file copied in: part of
    # the agent's configuration hash, so two programs at one path are two configurations.
    digests: tuple[tuple[str, str], ...] = ()


def _host_path(word: str, base_dir: Path) -> Path | None:
    """The host file a command word names, or None when it names none."""
    if "/" not in word or word.startswith("$") or "://" in word:
        return None
    if word.startswith("/"):
        if word == "/" or any(word == d or word.startswith(d + "/") for d in SYSTEM_DIRS):
            return None
        path = Path(word)
    else:
        path = base_dir / word
    return path.resolve() if path.is_file() else None


def _replace_word(command: str, word: str, replacement: str) -> str:
    """`command` with each standalone occurrence of `word` (bare or quoted) replaced."""
    for written in dict.fromkeys((word, shlex.quote(word), f'"{word}"')):
        pattern = _WORD_EDGE_BEFORE + re.escape(written) + _WORD_EDGE_AFTER
        command, count = re.subn(pattern, lambda _: replacement, command)
        if count:
            return command
    raise ConfigError(f"--agent=cmd:{command}: cannot rewrite the host path {word!r} (write it as a plain word)")


def _read_only(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if Path(info.name).name in SKIPPED_NAMES:
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if info.isfile():  # read-only copies (directories stay writable, so the copy can be removed)
        info.mode &= ~0o222
    return info


def _archive(entries: list[tuple[str, Path]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, path in entries:
            archive.add(path, arcname=name, filter=_read_only)
    data = buffer.getvalue()
    if len(data) > MAX_UPLOAD_BYTES:
        raise ConfigError(
            f"the agent's files are {len(data) / 1e6:.0f} MB (limit {MAX_UPLOAD_BYTES // 2**20} MiB per copy): "
            "install it with --agent-setup, or mount it with --agent-mount=HOST:CONTAINER:ro"
        )
    return data


def archive_digests(archive: bytes) -> tuple[tuple[str, str], ...]:
    """(name, sha256) of each file of a copy-in archive, as it is copied (a link: its target)."""
    found: list[tuple[str, str]] = []
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as opened:
        for member in opened.getmembers():
            if member.isfile():
                extracted = opened.extractfile(member)
                data = extracted.read() if extracted is not None else b""
                found.append((member.name, hashlib.sha256(data).hexdigest()))
            elif member.issym() or member.islnk():
                found.append((member.name, "link:" + member.linkname))
    return tuple(sorted(found))


def _check_program(command: str, words: list[str], base_dir: Path) -> None:
    """The program of the command, written `./x` or `../x`, must be a file where pytest runs.

    Such a word means a host file (the README's `cmd:./my-agent.sh`); were it missing, every item
    would run the agent, fail with "No such file" and count as an agent error. Other words, and
    a program without `./` (`my-cli`, `scripts/run.sh`, `/opt/tool/run`), may be the
    environment's own, so they are left to it."""
    program = next((word for word in words if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", word)), None)
    if program is None:
        return
    host = _host_path(program, base_dir)
    if host is not None and not host.stat().st_mode & 0o111:
        # The copy keeps the file's mode: it would fail with exit status 126 on every item.
        raise ConfigError(f"--agent=cmd:{command}: {program} is not executable (the program of a cmd: agent runs "
                          f"as it is): chmod +x {program}, or name its interpreter, e.g. cmd:bash {program}")
    if not program.startswith(("./", "../")):
        return
    path = base_dir / program
    if path.is_file():
        return
    what = "is a directory, not a file" if path.is_dir() else "does not exist"
    raise ConfigError(f"--agent=cmd:{command}: {program} {what} (looked for {path.resolve()}; a cmd: "
                      "agent's ./program is a file where pytest runs, copied into each environment)")


@lru_cache(maxsize=32)
def host_program(command: str, base_dir: str, upload: str = "file") -> HostProgram:
    """Find the host files of a `cmd:` command (relative ones below `base_dir`); cached per
    process, since every item of the run resolves the same agent: what each item copies in is
    what was read at the start, and `digests` say which bytes those were."""
    if upload not in UPLOAD_MODES:
        raise ConfigError(f"--agent-option upload={upload!r}: one of {', '.join(UPLOAD_MODES)}")
    try:
        words = shlex.split(command, comments=False, posix=True)
    except ValueError as exc:
        raise ConfigError(f"--agent=cmd:{command}: {exc}") from exc
    found = {word: path for word in words if (path := _host_path(word, Path(base_dir))) is not None}
    _check_program(command, words, Path(base_dir))
    if not found:
        return HostProgram(command, None, ())
    target = '"$' + AGENT_DIR_VARIABLE + '"/'
    entries: list[tuple[str, Path]] = []
    rewritten = command
    if upload == "dir":
        root = next(iter(found.values())).parent
        for word, path in found.items():
            if not path.is_relative_to(root):
                raise ConfigError(f"--agent=cmd:{command}: with upload=dir every host file must be below "
                                  f"{root}, and {path} is not")
            rewritten = _replace_word(rewritten, word, target + shlex.quote(path.relative_to(root).as_posix()))
        entries = [(child.name, child) for child in sorted(root.iterdir()) if child.name not in SKIPPED_NAMES]
    else:
        names: dict[str, Path] = {}
        for word, path in found.items():
            if names.setdefault(path.name, path) != path:
                raise ConfigError(f"--agent=cmd:{command}: two host files named {path.name!r}; "
                                  "use --agent-option upload=dir with one directory")
            rewritten = _replace_word(rewritten, word, target + shlex.quote(path.name))
        entries = sorted(names.items())
    archive = _archive(entries)
    return HostProgram(rewritten, archive, tuple(str(path) for path in found.values()), archive_digests(archive))

