"""ubuntu:24.04 as Terminal-Bench 2 tasks start FROM it (issue 50): pulled where a registry answers,
else a stand-in bootstrapped from Ubuntu's packages with a mirror and keys the user gives (no host
name in the code), and a task rebuilt on it as published: nothing added to the base (no python3),
test.sh's uvx tools in a Python kept off PATH as uv keeps its own.

The stand-in's own bootstrap needs an Ubuntu mirror, which CI does not have: it was made and used
here by hand (datasets/tb2-residual's dna-insert state, docs/datasets.md). These tests cover
everything short of that download: the choice of release, mirror, keys and script, the image's
apt sources, the rebuilt Dockerfile, the uvx stand-in run for real, and the errors."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from dockerneeded import docker_test, engine_needed  # noqa: F401 - engine_needed is autouse

from swe_residual.dataset.errors import InfraError
from swe_residual.environments.docker import rebuild
from swe_residual.environments.docker.base_image import apt_sources
from swe_residual.environments.docker.ubuntu_image import (
    MIRROR_ENV, POCKETS, UbuntuImage, debootstrap_script, image_for_release, sources_text, ubuntu_keyring,
    ubuntu_mirror, ubuntu_release,
)


@pytest.mark.unit
def test_the_ubuntu_images_a_stand_in_is_made_for() -> None:
    assert ubuntu_release("ubuntu:24.04") == UbuntuImage("ubuntu:24.04", "noble")
    assert ubuntu_release("docker.io/library/ubuntu:22.04") == UbuntuImage("ubuntu:22.04", "jammy")
    assert ubuntu_release("ubuntu:noble-20251013") == UbuntuImage("ubuntu:noble-20251013", "noble")
    assert [ubuntu_release(name) for name in ("ubuntu:20.04", "ubuntu", "debian:12", "python:3.13")] == [None] * 4
    assert image_for_release("noble").reference == "ubuntu:24.04"
    with pytest.raises(InfraError, match="no Ubuntu release 'bionic'"):
        image_for_release("bionic")


@pytest.mark.unit
def test_the_mirror_is_the_users_never_the_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    debian = tmp_path / "debian.sources"
    debian.write_text("Types: deb\nURIs: http://deb.example/debian\nSuites: bookworm\nComponents: main\n")
    ubuntu = tmp_path / "ubuntu.list"
    ubuntu.write_text("deb http://mirror.example/ubuntu/ noble main universe\n")
    assert ubuntu_mirror("noble", "http://given.example/ubuntu/", apt_sources([debian])) == "http://given.example/ubuntu"
    # An Ubuntu host's own apt source for the release.
    assert ubuntu_mirror("noble", None, apt_sources([debian, ubuntu])) == "http://mirror.example/ubuntu"
    # A PPA for the same suite, read first, is not Ubuntu's archive: the source its keys sign is.
    ppa = tmp_path / "a-ppa.list"
    ppa.write_text("deb [signed-by=/etc/apt/keyrings/ppa.gpg] https://ppa.example/team/ubuntu noble main\n")
    own = tmp_path / "ubuntu.sources"
    own.write_text("Types: deb\nURIs: http://own.example/ubuntu/\nSuites: noble noble-updates\nComponents: main\n"
                   "Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n")
    assert ubuntu_mirror("noble", None, apt_sources([ppa, own])) == "http://own.example/ubuntu"
    monkeypatch.setenv(MIRROR_ENV, "http://env.example/ubuntu")
    assert ubuntu_mirror("noble", None, apt_sources([debian, ubuntu])) == "http://env.example/ubuntu"
    monkeypatch.delenv(MIRROR_ENV)
    # A Debian machine names none: the error says how to give one.
    with pytest.raises(InfraError, match=r"no Ubuntu mirror for noble.*--release noble --mirror URL.*" + MIRROR_ENV):
        ubuntu_mirror("noble", None, apt_sources([debian]))


@pytest.mark.unit
def test_the_keys_are_given_or_ubuntus_own(tmp_path: Path) -> None:
    keys = tmp_path / "keys.gpg"
    keys.write_bytes(b"\x99")
    assert ubuntu_keyring(str(keys)) == keys
    with pytest.raises(InfraError, match="no Ubuntu archive keyring at .*missing.gpg.*--keyring FILE"):
        ubuntu_keyring(str(tmp_path / "missing.gpg"))


@pytest.mark.unit
def test_an_older_debootstrap_bootstraps_a_newer_ubuntu_with_its_ubuntu_script(tmp_path: Path) -> None:
    (tmp_path / "gutsy").write_text("")
    assert debootstrap_script("noble", tmp_path) == tmp_path / "gutsy"
    (tmp_path / "noble").symlink_to("gutsy")
    assert debootstrap_script("noble", tmp_path) == tmp_path / "noble"


@pytest.mark.unit
def test_the_images_apt_sources_serve_every_pocket_from_the_one_mirror() -> None:
    text = sources_text("http://mirror.example/ubuntu", "noble")
    assert "URIs: http://mirror.example/ubuntu/\n" in text
    assert "Suites: noble noble-updates noble-backports noble-security\n" in text
    assert "Components: main restricted universe multiverse\n" in text
    assert [pocket for pocket in POCKETS if f"noble{pocket}" not in text] == []
    assert text.count("http") == 1  # no other host: security updates come from the same mirror


def _task(root: Path, test_sh: str = "") -> Path:
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\nCOPY data.txt .\n")
    (root / "environment" / "data.txt").write_text("x\n")
    (root / "task.toml").write_text('[environment]\ndocker_image = "example/dna:1"\n')
    if test_sh:
        (root / "tests").mkdir()
        (root / "tests" / "test.sh").write_text(test_sh)
    return root


TEST_SH = ("#!/bin/bash\napt-get update\napt-get install -y curl\ncurl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh\n"
           "source $HOME/.local/bin/env\nuvx \\\n  -p 3.13 \\\n  -w pytest==8.4.1 \\\n  -w pytest-json-ctrf==0.3.5 \\\n"
           "  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA\n")


def test_a_task_on_ubuntu_is_rebuilt_on_ubuntu_with_nothing_added(tmp_path: Path) -> None:
    plan = rebuild.make_plan(_task(tmp_path / "task", TEST_SH), [])
    assert plan.stand_in == rebuild.StandIn("noble", False, (), ubuntu="ubuntu:24.04")
    assert plan.stand_in.build_command == "swe-residual build-base --release noble --mirror URL"
    prelude, notes = rebuild.base_prelude(plan, "")
    generated = rebuild.generated_dockerfile(plan, prelude).splitlines()
    # The uvx tools are made in a stage of their own, on CPython 3.13 (test.sh's -p 3.13) ...
    assert generated[0] == f"FROM {rebuild.UVX_PYTHON_IMAGE} AS {rebuild.UVX_STAGE}"
    assert generated[2].endswith("bin/pip install pytest==8.4.1 pytest-json-ctrf==0.3.5")
    # ... and the task's image is the published base, FROM as written, with their folders copied in.
    final = generated[generated.index("FROM ubuntu:24.04"):]
    assert f"COPY --from={rebuild.UVX_STAGE} {rebuild.UVX_PYTHON} {rebuild.UVX_PYTHON}" in final
    assert f"COPY --from={rebuild.UVX_STAGE} {rebuild.UVX_TOOLS} {rebuild.UVX_TOOLS}" in final
    # No python3, pip, venv or curl from apt; nothing on PATH but the uvx stand-in.
    joined = "\n".join(final)
    assert "apt-get" not in joined and "/opt/venv" not in joined and "ENV PATH" not in joined
    assert "COPY data.txt ." in final
    assert any("nothing added to it (no python3, as published)" in note for note in notes)
    rebuild.prepare_context(plan, tmp_path / "context", progress=lambda _: None)
    assert any("not curl: test.sh installs it as published" in note for note in plan.notes)
    # Without uvx in test.sh there is no first stage.
    bare = rebuild.make_plan(_task(tmp_path / "bare"), [])
    assert rebuild.generated_dockerfile(bare, rebuild.base_prelude(bare, "")[0]).startswith("FROM ubuntu:24.04\n")


def test_the_uvx_stand_in_runs_the_tool_with_its_environment_first_on_path(tmp_path: Path) -> None:
    """As uvx does: a test's `python3` (polyglot-c-py runs `python3 main.py.c`) is the tools' own
    Python, on an image that has none of its own. Run for real with a tools folder of this test's."""
    tools = tmp_path / "uvx-tools"
    (tools / "bin").mkdir(parents=True)
    (tools / "bin" / "python3").write_text("#!/bin/sh\necho tools-python \"$@\"\n")
    (tools / "bin" / "pytest").write_text("#!/bin/sh\npython3 -c ok \"$@\"\n")
    for name in ("python3", "pytest"):
        (tools / "bin" / name).chmod(0o755)
    script = tmp_path / "uvx"
    script.write_text(rebuild.UVX_STANDIN.replace(rebuild.UVX_TOOLS, str(tools)))
    script.chmod(0o755)
    done = subprocess.run([str(script), "-p", "3.13", "-w", "pytest==8.4.1", "pytest", "-rA"], capture_output=True,
                          text=True, env={**os.environ, "PATH": "/usr/bin:/bin"}, check=True)
    assert done.stdout.strip() == "tools-python -c ok -rA"



@pytest.mark.unit
def test_the_uvx_stages_image_is_found_in_the_builds_output_to_be_removed() -> None:
    """The classic builder leaves an earlier stage's image untagged (dangling): the build reads
    which it was from its own output, as it streams in pieces."""
    stages = rebuild.StageImages()
    for piece in ["Step 1/6 : FROM swe-residual-python:3.13-bookworm AS swe-residual-uvx\n ---> 1111aaaa2222\n",
                  "Step 2/6 : RUN pip install pytest\n ---> Running in 99\n", "Removing intermediate container 99\n ---",
                  "> 3333bbbb4444\nStep 3/6 : FROM ubuntu:24.04\n ---> 5555cccc6666\n",
                  "Step 4/6 : COPY --from=swe-residual-uvx /opt/uvx-tools /opt/uvx-tools\n ---> 7777dddd8888\n"]:
        stages.feed(piece)
    assert stages.finished_stages() == ["3333bbbb4444"]
    single = rebuild.StageImages()
    single.feed("Step 1/2 : FROM ubuntu:24.04\n ---> 5555cccc6666\nStep 2/2 : WORKDIR /app\n ---> 9999eeee0000\n")
    assert single.finished_stages() == []


@docker_test
def test_with_no_registry_and_no_mirror_build_base_says_how_to_give_one(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`build-base --release jammy` on a machine like this one (no registry, Debian's apt sources,
    no ubuntu:22.04): one error naming the two ways to give a mirror. Where a registry answers,
    the image is pulled instead and the command succeeds."""
    import docker

    from swe_residual.cli.main import main as cli_main

    monkeypatch.delenv(MIRROR_ENV, raising=False)
    client = docker.from_env()
    try:
        if client.images.list(name="ubuntu:22.04"):
            pytest.skip("this engine has ubuntu:22.04 already")  # another user's image: not touched
    finally:
        client.close()
    code = cli_main(["build-base", "--release", "jammy"])
    err = capsys.readouterr().err
    if code == 0:  # a registry answered: the published image was pulled
        return
    assert code != 0
    assert "no Ubuntu mirror for jammy" in err and "--release jammy --mirror URL" in err and MIRROR_ENV in err
    # Debian-only options are refused with an Ubuntu one, and the reverse.
    assert cli_main(["build-base", "--release", "noble", "--python", "3.13"]) == 2
    assert cli_main(["build-base", "--release", "bookworm", "--mirror", "http://mirror.invalid/ubuntu"]) == 2


@docker_test
def test_where_no_ubuntu_image_can_be_had_debian_stands_in_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task FROM ubuntu:22.04 whose own image no registry serves (a loopback port nobody
    listens on), on a machine like CI's: no registry, no ubuntu:22.04, no Ubuntu mirror named.
    Its stand-in is built on Debian bookworm, as before the Ubuntu route, and says why; where a
    registry does give ubuntu:22.04, the stand-in is built on that instead."""
    import secrets

    import docker
    from registry import unused_port

    from swe_residual.dataset.load import load_dataset
    from swe_residual.environments.docker import DockerBackend

    monkeypatch.delenv(MIRROR_ENV, raising=False)
    client = docker.from_env()
    if client.images.list(name="ubuntu:22.04"):
        client.close()
        pytest.skip("this engine has ubuntu:22.04 already")  # another user's image: not touched
    reference = f"127.0.0.1:{unused_port()}/swe-residual-test/ubuntu-fallback-{secrets.token_hex(4)}:1"
    task = tmp_path / "dataset" / "on-jammy"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text("FROM ubuntu:22.04\nWORKDIR /app\n")
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (task / "instruction.md").write_text("Nothing.\n")
    (task / "task.toml").write_text(f'schema_version = "1.3"\n[task]\nname = "test/on-jammy"\n[metadata]\n'
                                    f'track = "machine"\nworkdir = "/app"\n[environment]\ndocker_image = "{reference}"\n')
    said: list[str] = []
    try:
        with DockerBackend(run_id=f"ubuntu-fallback-{secrets.token_hex(4)}", cache_dir=tmp_path / "cache",
                           progress=said.append) as backend:
            prepared = backend.task_image(load_dataset(task.parent).entries[0].task)
        assert prepared.source is not None and prepared.source.origin == "stand-in"
        labels = client.images.get(reference).labels
        if client.images.list(name="ubuntu:22.04"):  # a registry gave it
            assert labels["swe-residual.rebuild.base"] == "ubuntu:22.04"
            return
        assert labels["swe-residual.rebuild.base"] == "swe-residual-base:bookworm"
        how = labels["swe-residual.stand-in.how"]
        assert "ubuntu:22.04: Debian bookworm stands in for Ubuntu" in how
        assert "ubuntu:22.04 could not be had here: no Ubuntu mirror for jammy" in how
        assert any("ubuntu:22.04 cannot be had here" in line for line in said)
    finally:
        try:
            client.images.remove(reference, force=True)
        except docker.errors.ImageNotFound:
            pass
        client.close()
