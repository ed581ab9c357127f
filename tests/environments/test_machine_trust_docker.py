"""The machine's trust in the docker backend's containers, on a real engine: a container with a
network gets the CA bundle read-only at a fixed path and the variables pointing at it, one on
network `none` gets neither, and nothing of it goes into the container's own configuration (a
commit would carry it into images whose containers may have no network)."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dockerneeded import engine_needed, requires_docker  # noqa: F401 - engine_needed is autouse
from taskfactory import make_machine_task

from swe_residual.environments.base import StartSpec
from swe_residual.environments.docker import LABEL, DockerBackend, remove_cached_images
from swe_residual.environments.docker.base_image import ensure_base_image
from swe_residual.environments.docker.containers import TRUST_BUNDLE
from swe_residual.environments.machine_trust import BUNDLE_VARIABLES, host_pip_config, resolve_trust
from swe_residual.dataset.task import Task, load_task

pytestmark = [*requires_docker, pytest.mark.slow]

BUNDLE = "-----BEGIN CERTIFICATE-----\nbWFjaGluZSB0cnVzdCB0ZXN0\n-----END CERTIFICATE-----\n"
SHOW = f"for v in {' '.join(BUNDLE_VARIABLES)}; do printenv $v || echo unset; done; cat {TRUST_BUNDLE} || echo absent"


def make_task(root: Path, task_id: str, network: str) -> Task:
    """The tests' tiny machine task (an image built FROM the Debian base) whose agent runs on
    `network` (public: the engine's bridge)."""
    path = make_machine_task(root, task_id, None, tmux=False)
    toml = path / "task.toml"
    toml.write_text(toml.read_text().replace("[agent]\n", f'[agent]\nnetwork_mode = "{network}"\n'))
    return load_task(path)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Task]]:
    ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    root = tmp_path_factory.mktemp("trust-tasks")
    suffix = secrets.token_hex(3)
    made = {network: make_task(root, f"trust-{network}-{suffix}", network) for network in ("public", "no-network")}
    yield made
    for task in made.values():
        remove_cached_images(task.id)


def _spec(item: str) -> StartSpec:
    return StartSpec(run_id=f"trust-test-{secrets.token_hex(3)}", item_id=item, attempt=1)


def _container_env(container_id: str) -> list[str]:
    inspected = subprocess.run(["docker", "inspect", container_id], capture_output=True, text=True, check=True)
    return json.loads(inspected.stdout)[0]["Config"]["Env"] or []


def test_a_container_with_a_network_gets_the_bundle_and_one_without_gets_nothing(
        tasks: dict[str, Task], tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.crt"
    bundle.write_text(BUNDLE)
    with DockerBackend(cache_dir=tmp_path / "cache", machine_trust=str(bundle), progress=lambda line: None,
                       sweep_at_start=False) as backend:
        with backend.start(tasks["public"], None, _spec("trust-public")) as env:
            shown = env.exec(SHOW, timeout_sec=60)
            assert shown.stdout.splitlines() == [TRUST_BUNDLE] * len(BUNDLE_VARIABLES) + BUNDLE.splitlines()
            # read-only, and a command's own value wins
            assert env.exec(f"echo x > {TRUST_BUNDLE}", timeout_sec=60).exit_code != 0
            assert env.exec("printenv PIP_CERT", env={"PIP_CERT": "/mine"}, timeout_sec=60).stdout == "/mine\n"
            assert not any(line.split("=", 1)[0] in BUNDLE_VARIABLES for line in _container_env(env.container_id))
            # the mount point is on the scratch tmpfs: not in the container's changes
            changed = subprocess.run(["docker", "diff", env.container_id], capture_output=True, text=True,
                                     check=True).stdout
            assert "machine-trust" not in changed
        with backend.start(tasks["no-network"], None, _spec("trust-none")) as env:
            shown = env.exec(SHOW, timeout_sec=60)
            assert shown.stdout.splitlines() == ["unset"] * len(BUNDLE_VARIABLES) + ["absent"]
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}.backend={backend.token}"],
                          capture_output=True, text=True, check=True).stdout
    assert left == ""


def test_none_gives_a_networked_container_nothing(tasks: dict[str, Task], tmp_path: Path) -> None:
    with DockerBackend(cache_dir=tmp_path / "cache", machine_trust="none", progress=lambda line: None,
                       sweep_at_start=False) as backend:
        with backend.start(tasks["public"], None, _spec("trust-off")) as env:
            assert env.exec(SHOW, timeout_sec=60).stdout.splitlines() == ["unset"] * len(BUNDLE_VARIABLES) + ["absent"]


def _index_url() -> str:
    """The package index this machine's pip uses: its own setting, else pip's default (read from
    the installed pip: no index is named here)."""
    settings, _ = host_pip_config()
    if settings.get("index-url"):
        return settings["index-url"]
    from pip._internal.models.index import PyPI

    return str(PyPI.simple_url)


def test_auto_lets_a_networked_container_reach_the_machine_s_package_index(tasks: dict[str, Task], tmp_path: Path) -> None:
    """With `auto`, a container gets the machine's bundle exactly when it holds local additions;
    only then does HTTPS from the container depend on it (a TLS-intercepting proxy's CA, as on a
    sandboxed machine), so only then is the index asked: elsewhere the stock bundle of the image
    already does, and the test would check the network, not this feature."""
    trust = resolve_trust("auto")
    url = _index_url().rstrip("/") + "/pip/"
    fetch = f"python3 -c \"import urllib.request; print(urllib.request.urlopen('{url}', timeout=60).status)\""
    with DockerBackend(cache_dir=tmp_path / "cache", machine_trust="auto", progress=lambda line: None,
                       sweep_at_start=False) as backend:
        assert backend.machine_trust.bundle == trust.bundle
        with backend.start(tasks["public"], None, _spec("trust-auto")) as env:
            shown = env.exec(SHOW, timeout_sec=60).stdout.splitlines()
            if trust.bundle is None:
                assert shown == ["unset"] * len(BUNDLE_VARIABLES) + ["absent"]
                return
            assert shown[:len(BUNDLE_VARIABLES)] == [TRUST_BUNDLE] * len(BUNDLE_VARIABLES)
            assert "\n".join(shown[len(BUNDLE_VARIABLES):]) + "\n" == trust.bundle.read_text()
            fetched = env.exec(fetch, timeout_sec=120)
            assert fetched.exit_code == 0 and fetched.stdout.strip() == "200", fetched.output
