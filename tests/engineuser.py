"""A user who is not root but may reach the engine, with a checkout and a virtual environment of
its own: the README's first command run as its users run it (GitHub-hosted runners, laptops).

Only root can make such a user (`useradd`), so `engine_user()` is for tests running as root; a
test running as another user already is one. What the user gets:

- membership of the group owning the engine's socket (`/var/run/docker.sock`, or the path in a
  `unix://` DOCKER_HOST); an engine on tcp:// needs none;
- a HOME of its own (so the suite's cache, `~/.cache/swe-residual`, starts cold for it);
- a copy of the checkout it owns: the files git lists (tracked, and untracked but not ignored,
  as the tests' own working tree has them), nothing the tests' runs left beside them;
- a virtual environment made from the base interpreter with `--system-site-packages`, so the
  package's dependencies need no download, then `python -m pip install -e .` as the README says;
- a PATH without debootstrap (nothing of the offline route can be reached).

Where the interpreter sits under a directory closed to others (pyenv's Pythons under /root, mode
0700), the user is given the right to pass through that directory alone, by an ACL entry
(`setfacl`, Debian's `acl` package, which scripts/setup-tests installs), taken back at the end
with the user, its files and its group membership.
"""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

# The directories a user's PATH is made of, the offline route's tools left out (checked below).
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


@dataclass(frozen=True)
class EngineUser:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: Path
    checkout: Path
    python: Path  # the user's virtual environment's interpreter

    def env(self, **extra: str) -> dict[str, str]:
        """A login-like environment: nothing of the calling root process's variables but the engine's
        address (and CI), so the run finds its cache, config and tools where a user's would be."""
        env = {"HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "LANG": "C.UTF-8",
               "PATH": os.pathsep.join([str(self.python.parent), *SYSTEM_PATH])}
        for name in ("DOCKER_HOST", "CI"):
            if name in os.environ:
                env[name] = os.environ[name]
        return {**env, **extra}

    def run(self, args: list[str], *, cwd: Path | None = None, timeout: float = 600,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """`args` as the user (its uid, its group, the engine's group), in its checkout by default."""
        return subprocess.run(args, cwd=cwd or self.checkout, env=env or self.env(), user=self.uid, group=self.gid,
                              extra_groups=list(self.groups), capture_output=True, text=True, timeout=timeout)


def engine_socket_group() -> int | None:
    """The group owning the engine's unix socket; None when the engine is reached over the network."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    url = urlparse(host)
    if url.scheme != "unix":
        return None
    return os.stat(url.path).st_gid


def _closed_ancestors(path: Path, uid: int, groups: set[int]) -> list[Path]:
    """The directories above `path` that `uid` (in `groups`) may not pass through."""
    closed = []
    for directory in reversed(path.parents):
        info = directory.stat()
        if info.st_uid == uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid in groups:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            closed.append(directory)
    return closed


def _checkout_files(repo: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo,
                            capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name]


def copy_checkout(repo: Path, target: Path) -> int:
    """The files git lists in `repo` copied to `target` (links kept as links); returns how many."""
    copied = 0
    for name in _checkout_files(repo):
        source = repo / name
        if not source.exists() and not source.is_symlink():
            continue  # listed by the index, deleted in the working tree
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            destination.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, destination)
        copied += 1
    return copied


def _run(args: list[str]) -> None:
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")


@contextmanager
def engine_user(repo: Path) -> Iterator[EngineUser]:
    """A fresh non-root user able to reach the engine, with its own HOME, copy of `repo` and venv
    (the package installed from that copy); removed with everything it owns at the end."""
    if os.geteuid() != 0:
        raise RuntimeError("only root can make a user: run as that user instead")
    name = f"swr{secrets.token_hex(4)}"
    home = Path(tempfile.gettempdir()) / f"swe-residual-user-{name}"
    socket_group = engine_socket_group()
    groups = ()
    if socket_group is not None:
        try:
            groups = (grp.getgrgid(socket_group).gr_name,)
        except KeyError as error:
            raise RuntimeError(f"the engine's socket belongs to group {socket_group}, which has no name: "
                               "useradd cannot add a user to it") from error
    base_python = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    # Run from a virtual environment, the dependencies are its own, not its base interpreter's.
    outer = sorted({sysconfig.get_paths()[key] for key in ("purelib", "platlib")}) if sys.prefix != sys.base_prefix else []
    _run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh", "--user-group",
          *(["--groups", ",".join(groups)] if groups else []), name])
    opened: list[Path] = []
    try:
        entry = pwd.getpwnam(name)
        member_of = {entry.pw_gid, *([socket_group] if socket_group is not None else [])}
        needed = [base_python, *(Path(p) for p in outer)]
        for directory in sorted({d for path in needed for d in _closed_ancestors(path, entry.pw_uid, member_of)}):
            if shutil.which("setfacl") is None:
                raise RuntimeError(f"{directory} is closed to other users and holds the interpreter "
                                   f"{base_python}: setfacl (Debian's acl package) would open it to the test's "
                                   "user alone; run scripts/setup-tests")
            _run(["setfacl", "-m", f"u:{name}:x", str(directory)])
            opened.append(directory)
        checkout = home / "checkout"
        copy_checkout(repo, checkout)
        _run(["chown", "-R", f"{name}:{name}", str(home)])
        user = EngineUser(name, entry.pw_uid, entry.pw_gid, tuple(sorted(member_of - {entry.pw_gid})), home,
                          checkout, home / "venv" / "bin" / "python")
        made = user.run([str(base_python), "-m", "venv", "--system-site-packages", str(home / "venv")])
        if made.returncode != 0:
            raise RuntimeError(f"the user's venv: {made.stderr.strip()}")
        if outer:
            purelib = user.run([str(user.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
            pth = Path(purelib.stdout.strip()) / "outer_packages.pth"
            pth.write_text("".join(f"{path}\n" for path in outer))
            os.chown(pth, user.uid, user.gid)
        yield user
    finally:
        for directory in opened:
            subprocess.run(["setfacl", "-x", f"u:{name}", str(directory)], capture_output=True)
        subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
