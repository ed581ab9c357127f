"""The guard that keeps the test tiers' marks true (`pytest tests -m unit`, `-m "not docker"`).

- A test marked `unit` starts no process, opens no connection and makes no Docker client, and
  needs none of the package's extras: it runs right after `pip install -e .`. What only the
  extras bring (matplotlib, mini-swe-agent, litellm and what they pull in: :func:`extra_modules`)
  cannot be imported from the project's code during a `unit` test, even where it is installed,
  so a `unit` test that needs an extra fails everywhere, and its failure says to mark it `extras`.
- A test marked `extras` keeps the rules of `unit` but may use the extras (`pip install -e
  '.[dev]'`); `pytest tests -m unit` leaves it out.
- A test not marked `docker` does not reach the Docker engine, from this process or from a
  process it starts: it runs with `DOCKER_HOST` at a socket of this guard that answers nothing
  and counts who connects, and a connection from this process to the engine's own address is
  refused.

What a test does against its marks is recorded when it happens and fails the test after its
setup or call, naming the mark: the refusal alone (an exception) could be swallowed by the code
under test (`--backend=auto` quietly falls back to local when no engine answers). Teardown is
not guarded: a fixture shared by a module or the session is torn down in whichever test comes
after its last user, whatever that test's marks. A process given an environment of its own,
without `DOCKER_HOST`, escapes the socket: the default engine socket is not watched.
"""

from __future__ import annotations

import builtins
import importlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement  # a dependency of pytest

# The Docker SDK's engine when DOCKER_HOST is not set.
DEFAULT_ENGINE_SOCKET = "/var/run/docker.sock"
PACKAGE = "swe-residual"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class _Installed:
    """What the guard reads of an installed distribution's METADATA (read once: parsing it with
    importlib.metadata's email parser for each question takes a second over a large venv)."""

    distribution: metadata.Distribution
    requires: tuple[str, ...]
    extras: frozenset[str]

    @classmethod
    def read(cls, distribution: metadata.Distribution) -> tuple[str, _Installed]:
        fields: dict[str, list[str]] = {}
        for line in (distribution.read_text("METADATA") or distribution.read_text("PKG-INFO") or "").splitlines():
            if not line:  # the headers end at the first empty line
                break
            if line[0].isspace():  # a continued header (a long License)
                continue
            key, _, value = line.partition(":")
            fields.setdefault(key.strip().lower(), []).append(value.strip())
        return _normal(fields.get("name", [""])[0]), cls(distribution, tuple(fields.get("requires-dist", [])),
                                                         frozenset(fields.get("provides-extra", [])))

    def requirements(self, extras: frozenset[str]) -> list[Requirement]:
        """What it requires on this machine when asked for with ``extras``."""
        found = [Requirement(text) for text in self.requires]
        return [r for r in found
                if r.marker is None or any(r.marker.evaluate({"extra": extra}) for extra in extras | {""})]


def _closure(installed: dict[str, _Installed], name: str, extras: frozenset[str]) -> set[str]:
    """The installed distributions ``name`` with ``extras`` brings, itself included (normalized)."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(_normal(name), extras)]
    while todo:
        key = todo.pop()
        if key in seen or key[0] not in installed:  # an extra's distribution not installed here
            continue
        seen.add(key)
        todo += [(_normal(r.name), frozenset(r.extras)) for r in installed[key[0]].requirements(key[1])]
    return {name for name, _ in seen}


_RECORD_TOP = re.compile(r"^([^/,\n]+)([/,])", flags=re.MULTILINE)  # a RECORD line's first path part


def _top_level(distribution: metadata.Distribution) -> set[str]:
    """The top-level modules a distribution installs (top_level.txt, else its RECORD's paths)."""
    listed = distribution.read_text("top_level.txt")
    if listed is not None:
        return {line.strip() for line in listed.splitlines() if line.strip()}
    paths = _RECORD_TOP.findall(distribution.read_text("RECORD") or "")
    return {name.split(".", 1)[0] for name, sep in set(paths)
            if name != "__pycache__" and not name.startswith("..") and not name.endswith((".dist-info", ".data"))
            and (sep == "/" or name.endswith((".py", ".so", ".pyd")))}


@cache
def extra_modules(package: str = PACKAGE) -> frozenset[str]:
    """The top-level modules installed here that only the package's extras bring (none where
    the package was installed without them): those of the distributions its extras require,
    with theirs, less those of the distributions its own dependencies require."""
    installed: dict[str, _Installed] = {}
    for distribution in metadata.distributions():
        # The first one on sys.path is the one imported (as metadata.distribution(name) finds it):
        # a checkout on PYTHONPATH with its own metadata is tested against its own dependencies.
        name, read = _Installed.read(distribution)
        installed.setdefault(name, read)
    if _normal(package) not in installed:
        return frozenset()
    core = _closure(installed, package, frozenset())
    brought = _closure(installed, package, installed[_normal(package)].extras) - core
    modules = set().union(*(_top_level(installed[name].distribution) for name in brought))
    return frozenset(modules - set().union(*(_top_level(installed[name].distribution) for name in core)))


class EngineTrap:
    """A unix socket standing in for the engine: counts each connection and closes it at once,
    so a client sees a dead engine instead of waiting for its timeout."""

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="engine-trap-")  # short: unix socket paths are limited
        self.url = f"unix://{self._dir}/docker.sock"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(f"{self._dir}/docker.sock")
        self._server.listen(64)
        self._lock = threading.Lock()
        self._connections = 0
        threading.Thread(target=self._serve, name="engine-trap", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:  # closed
                return
            with self._lock:
                self._connections += 1
            connection.close()

    @property
    def connections(self) -> int:
        with self._lock:
            return self._connections

    def close(self) -> None:
        try:
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        except OSError:
            pass
        self._server.close()
        shutil.rmtree(self._dir, ignore_errors=True)


def engine_address(docker_host: str | None) -> str | tuple[str, int] | None:
    """The address a socket connects to for the engine `docker_host` names (None: not watched)."""
    url = (docker_host or "").strip() or f"unix://{DEFAULT_ENGINE_SOCKET}"
    if url.startswith("unix://"):
        return os.path.realpath(url.removeprefix("unix://"))
    if url.startswith("tcp://"):
        host, _, port = url.removeprefix("tcp://").partition("/")[0].rpartition(":")
        return (host, int(port)) if port.isdigit() else None
    return None


def _is_address(address: Any, engine: str | tuple[str, int] | None) -> bool:
    if engine is None:
        return False
    if isinstance(engine, str):
        path = os.fsdecode(address) if isinstance(address, (str, bytes)) else None
        return path is not None and os.path.realpath(path) == engine
    return isinstance(address, tuple) and tuple(address[:2]) == engine


class TierGuard:
    """The pytest plugin: wraps the setup and the call of each of the project's tests."""

    def __init__(self, tests_dir: Path) -> None:
        self._tests_dir = tests_dir
        self._docker_host = os.environ.get("DOCKER_HOST")  # the real engine, before any test
        self._engine = engine_address(self._docker_host)
        self._trap: EngineTrap | None = None  # made at the first test that needs it

    def pytest_unconfigure(self) -> None:
        if self._trap is not None:
            self._trap.close()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        with self._guarded(item, "setup"):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        with self._guarded(item, "call"):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        try:
            return (yield)
        finally:
            self._restore_docker_host()  # a fixture's monkeypatch may have restored the trap's

    @contextmanager
    def _guarded(self, item: pytest.Item, phase: str) -> Iterator[None]:
        if not item.path.is_relative_to(self._tests_dir):  # the evaluation suite's own items
            yield
            return
        tier = next((mark for mark in ("unit", "extras") if item.get_closest_marker(mark)), None)
        unit = tier is not None  # `extras`: the rules of `unit`, with the extras
        docker = item.get_closest_marker("docker") is not None
        found: list[str] = []
        if item.get_closest_marker("unit") and item.get_closest_marker("extras"):
            found.append("is marked `extras` as well: `-m unit` would select a test that needs an extra")
        hidden: list[str] = []  # the extras' modules a `unit` test tried to import
        patches: list[tuple[Any, str, Any]] = []
        trap_before = 0
        if not docker:
            self._trap = self._trap or EngineTrap()
            trap_before = self._trap.connections
            if os.environ.get("DOCKER_HOST") == self._docker_host:  # unless the test names its own
                os.environ["DOCKER_HOST"] = self._trap.url
        if unit or not docker:
            patches += self._connect_patches(found, unit)
        if unit:
            patches += self._unit_patches(found)
        if tier == "unit":
            patches += self._extras_patches(hidden)
        originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
        for owner, name, replacement in patches:
            setattr(owner, name, replacement)
        try:
            yield
        except BaseException as failure:
            if hidden:  # the test may have failed for want of an extra it is not to need
                tried = ", ".join(dict.fromkeys(hidden))
                failure.add_note(f"tests/tierguard.py: this `unit` test tried to import {tried}, which only an extra "
                                 "brings; mark it `extras` if it needs it")
            raise
        finally:
            for owner, name, original in reversed(originals):
                setattr(owner, name, original)
            if not docker and self._trap is not None:
                self._restore_docker_host()
                if self._trap.connections > trap_before:
                    found.append("connected to the Docker engine (DOCKER_HOST), itself or from a process it started")
            if found:
                needs = f"must not be marked `{tier}`" if unit else "needs the `docker` mark"
                pytest.fail(f"{item.nodeid} {needs}: in its {phase} it " + "; ".join(dict.fromkeys(found)),
                            pytrace=False)

    def _restore_docker_host(self) -> None:
        if self._trap is None or os.environ.get("DOCKER_HOST") != self._trap.url:
            return
        if self._docker_host is None:
            del os.environ["DOCKER_HOST"]
        else:
            os.environ["DOCKER_HOST"] = self._docker_host

    def _connect_patches(self, found: list[str], unit: bool) -> list[tuple[Any, str, Any]]:
        """socket.connect(_ex): a unit test connects nowhere; another test not to the engine."""
        patches = []
        for name in ("connect", "connect_ex"):
            original = getattr(socket.socket, name)

            def connect(sock: socket.socket, address: Any, _original: Callable[..., Any] = original) -> Any:
                if unit or _is_address(address, self._engine):
                    what = f"opened a connection to {address!r}"
                    found.append(what)
                    raise ConnectionRefusedError(f"refused by tests/tierguard.py: {what}")
                return _original(sock, address)

            patches.append((socket.socket, name, connect))
        return patches

    @staticmethod
    def _extras_patches(hidden: list[str]) -> list[tuple[Any, str, Any]]:
        """The import statement and importlib.import_module: the project's code (any module that
        is not itself one of the extras') cannot import what only the extras bring, as after
        `pip install -e .`, where they are not installed. Libraries of the extras loaded earlier
        keep importing their own parts."""
        modules = extra_modules()
        if not modules:  # installed without the extras: nothing to hide
            return []
        original_import = builtins.__import__
        original_import_module = importlib.import_module

        def refuse(name: str, importer: Any) -> None:
            top = name.partition(".")[0]
            if top in modules and str(importer or "").partition(".")[0] not in modules:
                hidden.append(top)
                raise ModuleNotFoundError(f"No module named {top!r} in a `unit` test: it comes with an extra of "
                                          f"{PACKAGE} (tests/tierguard.py)", name=top)

        def guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                           level: int = 0) -> Any:
            if level == 0:
                refuse(name, (globals or {}).get("__name__"))
            return original_import(name, globals, locals, fromlist, level)

        def guarded_import_module(name: str, package: str | None = None) -> Any:
            if not name.startswith("."):
                refuse(name, sys._getframe(1).f_globals.get("__name__"))
            return original_import_module(name, package)

        return [(builtins, "__import__", guarded_import), (importlib, "import_module", guarded_import_module)]

    @staticmethod
    def _unit_patches(found: list[str]) -> list[tuple[Any, str, Any]]:
        """Starting a process (subprocess, GitPython and asyncio all go through
        Popen._execute_child) and making a Docker client."""
        import docker.api.client  # a dependency of the package itself
        import git  # noqa: F401 - GitPython runs `git version` when first imported: not the test's doing

        def refuse(what: str) -> Callable[..., Any]:
            def refused(*args: Any, **kwargs: Any) -> Any:
                found.append(what)
                raise PermissionError(f"refused by tests/tierguard.py: a `unit` test {what}")
            return refused

        patches: list[tuple[Any, str, Any]] = [
            (subprocess.Popen, "_execute_child", refuse("started a process")),
            (docker.api.client.APIClient, "__init__", refuse("made a Docker client")),
        ]
        for name in ("system", "fork", "posix_spawn", "posix_spawnp"):
            patches.append((os, name, refuse(f"started a process (os.{name})")))
        return patches
