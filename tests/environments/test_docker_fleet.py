"""Several Docker engines (`DockerFleet`, `--docker-host`) against the real engine (issue 15).

The machine has one engine; a second endpoint is made in this process: `EngineProxy` listens on
127.0.0.1:<free port> and forwards every connection, byte for byte and both ways, to the engine's
unix socket. So `tcp://127.0.0.1:PORT` and `unix:///var/run/docker.sock` are two engine URLs
(of one daemon), and the proxy can lose its engine on demand: `stop()` refuses connections and
cuts the open ones (a dead engine), `freeze()` accepts connections and never answers (a hung one).

Containers a lost engine leaves behind sit on the same daemon here; each test removes them by
their backend's label, then checks nothing labelled with this process is left.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from scripted_agents import DISCARD, FIX_CLAMP
from taskfactory import make_task

from swe_residual.agents import AgentResult, AgentSession
from swe_residual.environments.registry import make_backend
from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker import LABEL, DockerBackend, remove_cached_images
from swe_residual.environments.docker.fleet import DockerFleet, engine_cache_dir, preferred_index
from swe_residual.dataset.errors import ConfigError, InfraError
from swe_residual.environments.docker.base_image import ensure_base_image
from swe_residual.trial.records import record_json
from swe_residual.trial.runner import RunOptions, run_item
from swe_residual.dataset.states.state import load_state
from swe_residual.dataset.task import Task, load_task


def _engine_socket() -> str | None:
    """The unix socket of the environment's engine (the proxy's upstream), if it is one."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return host.removeprefix("unix://") if host.startswith("unix://") else None


SOCKET = _engine_socket()
UNIX_URL = f"unix://{SOCKET}"
needs_socket = pytest.mark.skipif(SOCKET is None, reason="the engine is not reached through a unix socket")


def needs_engine(test: Callable[..., None]) -> Callable[..., None]:
    """A test on the real engine, which the proxy reaches through its unix socket."""
    for mark in (*requires_docker, needs_socket):
        test = mark(test)
    return test


class EngineProxy:
    """tcp://127.0.0.1:PORT in front of the engine's unix socket, with a switch to lose it."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)  # the accept loop notices stop() within this
        self.url = f"tcp://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = 0
        self.frozen = threading.Event()
        self.stopped = threading.Event()
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="engine proxy", daemon=True).start()

    def freeze(self) -> None:
        """A hung engine: connections are accepted, and no byte goes either way any more."""
        self.frozen.set()

    def stop(self) -> None:
        """A dead engine: new connections are refused and the open ones cut."""
        self.stopped.set()
        self.listener.close()
        with self._lock:
            sockets, self._open = self._open, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a pump blocked in recv()
            except OSError:
                pass
            sock.close()

    def _keep(self, *sockets: socket.socket) -> None:
        with self._lock:
            self._open.extend(sockets)

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed by stop()
            self._keep(client)
            if self.frozen.is_set():
                continue  # accepted, never served
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.socket_path)
            except OSError:
                client.close()
                continue
            self._keep(upstream)
            self.connections += 1
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                break
            if not data:
                break
            while self.frozen.is_set() and not self.stopped.is_set():
                time.sleep(0.05)  # held, as a hung engine holds a request
            if self.stopped.is_set():
                break
            try:
                target.sendall(data)
            except OSError:
                break
        try:
            # Pass the half-close on: an exec's stdin ends when the client shuts its writing side.
            target.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class FixesClamp:
    """Fixes the task from any start; with `lose` set, its first run loses the engine under it first."""

    name = "fixes-clamp"

    def __init__(self, lose: EngineProxy | None = None, runs: list[int] | None = None) -> None:
        self.lose = lose
        self.runs = runs if runs is not None else []

    def run(self, session: AgentSession) -> AgentResult:
        self.runs.append(1)
        if self.lose is not None and len(self.runs) == 1:
            session.exec("git status --short")  # the engine answers through the proxy...
            self.lose.stop()  # ...until it is gone: the next command raises InfraError
        session.exec(f"{DISCARD} && {FIX_CLAMP}")  # inherited work goes: Clean and Residual starts alike
        return AgentResult(message="Fixed clamp.")


# -- fixtures ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_image() -> str:
    return ensure_base_image(progress=lambda line: print(line, file=sys.stderr))


@pytest.fixture
def live() -> Iterator[docker.DockerClient]:
    client = docker.DockerClient(base_url=UNIX_URL)
    yield client
    client.close()


@pytest.fixture
def proxy() -> Iterator[EngineProxy]:
    assert SOCKET is not None
    made = EngineProxy(SOCKET)
    yield made
    made.stop()


@pytest.fixture
def task(tmp_path: Path, base_image: str, live: docker.DockerClient) -> Iterator[Task]:
    # Unique per test: parallel sessions on one engine never share (or delete) its images.
    name = f"fleet-{secrets.token_hex(3)}"
    yield load_task(make_task(tmp_path / "data", name))
    remove_cached_images(name)
    assert live.api.images(filters={"reference": f"swe-residual-*:{name}-*"}) == []
    # Nothing labelled with this process is left on the engine.
    assert _labelled(live, f"{LABEL}.pid={os.getpid()}") == []


def _labelled(client: docker.DockerClient, label: str) -> list[str]:
    return [entry["Id"] for entry in client.api.containers(all=True, filters={"label": label})]


def _remove_stranded(client: docker.DockerClient, backend: DockerBackend) -> int:
    """Remove what a lost engine's backend could not (it sits on the live daemon here)."""
    stranded = _labelled(client, f"{LABEL}.backend={backend.token}")
    for container_id in stranded:
        client.api.remove_container(container_id, force=True, v=True)
    return len(stranded)


def _options(tmp_path: Path) -> RunOptions:
    return RunOptions(run_id="fleet", run_dir=tmp_path / "run", infra_retries=1)


def _dead_url() -> str:
    """A loopback port nothing listens on."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    return f"tcp://127.0.0.1:{port}"


# -- which engine ------------------------------------------------------------------------------
@pytest.mark.unit
def test_preferred_engine_follows_the_xdist_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    assert preferred_index(2, "gw0") == 0 and preferred_index(2, "gw3") == 1 and preferred_index(4, "gw3") == 3
    assert preferred_index(3, "") == 0 and preferred_index(3, "master") == 0
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw5")
    assert preferred_index(2) == 1
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert preferred_index(2) == 0


@pytest.mark.unit
@pytest.mark.parametrize("url, says", [
    ("127.0.0.1:2375", "starts with unix://, tcp:// or ssh://"),
    ("http://127.0.0.1:2375", "starts with unix://, tcp:// or ssh://"),
    ("tcp://127.0.0.1", "needs a host and a port"),
    ("tcp://127.0.0.1:docker", "port is not a number"),
    ("unix://", "needs the socket's path"),
    ("ssh://user@10.0.0.5/var/run/docker.sock", "no path"),
    ("tcp://127.0.0.1:2375?tls=1", "no query"),
])
def test_a_bad_engine_url_is_a_config_error(url: str, says: str) -> None:
    for hosts in [(url,), (UNIX_URL, url)]:
        with pytest.raises(ConfigError, match=r"--docker-host='.*'") as caught:
            make_backend("docker", "fleet", docker_hosts=hosts)
        assert says in str(caught.value) and url.strip() in str(caught.value)


@pytest.mark.unit
@pytest.mark.skipif(importlib.util.find_spec("paramiko") is not None, reason="paramiko is installed")
def test_an_ssh_engine_without_paramiko_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"docker\[ssh\]"):
        make_backend("docker", "fleet", docker_hosts=("ssh://builder@10.0.0.5",))


@needs_engine
def test_make_backend_builds_a_fleet_for_several_engines(proxy: EngineProxy, cache_dir: Path) -> None:
    one = make_backend("docker", "fleet", docker_hosts=(proxy.url,), progress=lambda line: None)
    try:
        assert isinstance(one, DockerBackend) and one.engine_url == proxy.url
    finally:
        one.close()
    several = make_backend("auto", "fleet", docker_hosts=(proxy.url, UNIX_URL, proxy.url), progress=lambda line: None)
    try:
        assert isinstance(several, DockerFleet) and several.engine_urls == (proxy.url, UNIX_URL)
        assert [engine.up for engine in several.engines] == [True, True]
        # Each engine builds and loads its images under its own lock directory.
        caches = {engine.backend.cache_dir for engine in several.engines if engine.backend is not None}
        assert len(caches) == 2
    finally:
        several.close()
    dead = _dead_url()
    with pytest.raises(ConfigError, match="does not answer"):
        make_backend("docker", "fleet", docker_hosts=(dead,))
    with pytest.raises(ConfigError, match=rf"no Docker engine answers: {dead} \(.+\), tcp://127.0.0.1:\d+ \(.+\)"):
        make_backend("docker", "fleet", docker_hosts=(dead, _dead_url()))
    with pytest.raises(ConfigError, match="backend is local"):
        make_backend("local", "fleet", docker_hosts=(UNIX_URL,))


@pytest.mark.slow
@needs_engine
def test_items_run_on_both_engines(task: Task, proxy: EngineProxy, cache_dir: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    urls = (proxy.url, UNIX_URL)
    state = load_state(task, task.path / "residual" / "drafter-1")
    # Two workers of one run: gw0 prefers the first engine, gw3 (3 mod 2) the second.
    for worker, expected in (("gw0", proxy.url), ("gw3", UNIX_URL)):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        with DockerFleet(urls, run_id="fleet", cache_dir=cache_dir, progress=lambda line: None) as fleet:
            clean = record_json(run_item(task, None, FixesClamp, fleet, _options(tmp_path)))
            residual = record_json(run_item(task, state, FixesClamp, fleet, _options(tmp_path)))
        for record in (clean, residual):
            assert record["outcome"] == "success" and record["reward"] == 1.0, record
            assert record["engine"] == expected
            assert [attempt["outcome"] for attempt in record["attempts"]] == ["success"]
        assert residual["start"] == "residual"
        # The engine built (or found) the task image under its own lock directory.
        assert list((engine_cache_dir(cache_dir, expected) / "docker").glob("swe-residual-task*.lock"))
    assert proxy.connections > 0  # the first worker's item really went through the tcp endpoint


@pytest.mark.slow
@needs_engine
@pytest.mark.parametrize("when", ["before the start", "while the agent runs"])
def test_a_lost_engine_retries_the_item_on_the_other(task: Task, proxy: EngineProxy, cache_dir: Path,
                                                      tmp_path: Path, live: docker.DockerClient, when: str) -> None:
    lines: list[str] = []
    fleet = DockerFleet((proxy.url, UNIX_URL), run_id="fleet", cache_dir=cache_dir, preferred=0, progress=lines.append)
    lost = fleet.engines[0].backend
    assert lost is not None
    try:
        runs: list[int] = []
        if when == "before the start":
            proxy.stop()
            record = record_json(run_item(task, None, FixesClamp, fleet, _options(tmp_path)))
        else:
            record = record_json(run_item(task, None, lambda: FixesClamp(lose=proxy, runs=runs), fleet, _options(tmp_path)))
            assert len(runs) == 2  # the agent ran on the lost engine, then again on the other
        first, second = record["attempts"]
        assert first["outcome"] == "infra_error" and proxy.url in first["error"], first
        assert "does not answer any more" in first["error"]
        assert second["outcome"] == "success"
        assert record["outcome"] == "success" and record["reward"] == 1.0 and record["engine"] == UNIX_URL
        down = fleet.engines[0]
        assert not down.up and down.down_reason and down.down_at is not None
        assert any(line.startswith(f"Docker engine {proxy.url} is down") for line in lines)
    finally:
        fleet.close()
        _remove_stranded(live, lost)  # the lost attempt's container, mid-run (none before the start)


@needs_engine
def test_no_engine_left_names_them_all(task: Task, proxy: EngineProxy, cache_dir: Path) -> None:
    dead = _dead_url()
    with DockerFleet((proxy.url, dead), run_id="fleet", cache_dir=cache_dir, preferred=0,
                     progress=lambda line: None) as fleet:
        assert [engine.up for engine in fleet.engines] == [True, False]
        proxy.stop()
        spec = StartSpec("fleet", "no-engine", 1)
        with pytest.raises(InfraError, match=f"Docker engine {proxy.url} does not answer any more"):
            fleet.start(task, None, spec)
        with pytest.raises(InfraError, match=rf"no Docker engine answers: {proxy.url} \(.+\), {dead} \(.+\)"):
            fleet.start(task, None, spec)


@needs_engine
@pytest.mark.parametrize("loss", ["refuses", "hangs"])
def test_close_with_a_lost_engine_is_bounded(task: Task, proxy: EngineProxy, cache_dir: Path, base_image: str,
                                             live: docker.DockerClient, loss: str) -> None:
    fleet = DockerFleet((proxy.url, UNIX_URL), run_id="fleet", cache_dir=cache_dir, preferred=1,
                        close_timeout_sec=3.0, probe_timeout_sec=2.0, progress=lambda line: None)
    on_live, on_lost = fleet.engines[1].backend, fleet.engines[0].backend
    assert on_live is not None and on_lost is not None
    try:
        # One container on each engine, neither closed by its user: close() must remove them.
        # (Of the base image: what matters here is whose container it is, not the task's image.)
        for backend, item in ((on_live, "close-live"), (on_lost, "close-lost")):
            backend.start_container(base_image, task, StartSpec("fleet", item, 1), "none", None)
        assert len(_labelled(live, f"{LABEL}.backend={on_live.token}")) == 1
        proxy.stop() if loss == "refuses" else proxy.freeze()
        began = time.monotonic()
        fleet.close()  # does not raise: the engine that failed is the lost one
        took = time.monotonic() - began
        assert took < 8.0, f"close() took {took:.1f}s"
        assert _labelled(live, f"{LABEL}.backend={on_live.token}") == []
        assert not fleet.engines[0].up and fleet.engines[1].up
    finally:
        proxy.stop()  # a close still stuck on the frozen proxy fails now, in its own thread
        assert _remove_stranded(live, on_lost) == 1
