"""scripts/rebuild-task-image's Dockerfile rewriting (docs/real-tasks.md; issue 32): `COPY file .`
is a file copied as written, the venv's PATH survives a `RUN bash -lc` (built for real), git
submodules clone from local mirrors, and a RUN step that printed an error yet exited 0 is a
`deviation:`."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest
from dockerneeded import docker_test, engine_needed  # noqa: F401 - engine_needed is autouse
from conftest import REPO_ROOT


def _load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("rebuild_task_image", str(REPO_ROOT / "scripts" / "rebuild-task-image"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module  # dataclasses look their module up there
    loader.exec_module(module)
    return module


rebuild = _load_script()


def _task(root: Path, dockerfile: str) -> Path:
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text(dockerfile)
    (root / "environment" / "data.csv").write_text("a,b\n")
    (root / "task.toml").write_text('[environment]\ndocker_image = "example/task:1"\n')
    return root


@pytest.mark.unit
@pytest.mark.parametrize(("args", "whole"), [
    ("data.csv .", False), ("data.csv ./", False), ("--chown=1:1 src/ .", False), ('["data.csv", "."]', False),
    ("a.txt b.txt /app/", False), (". /app", True), ("./ /app", True), ('[".", "/app"]', True),
    ("--chown=1:1 . /app", True),
])
def test_only_a_source_of_dot_copies_the_whole_context(args: str, whole: bool) -> None:
    assert rebuild.copies_whole_context(args) is whole


@pytest.mark.unit
def test_copy_file_into_the_workdir_is_planned_and_copy_dot_refused(tmp_path: Path) -> None:
    task = _task(tmp_path / "one", "FROM ubuntu:24.04\nWORKDIR /app\nCOPY data.csv .\n")
    plan = rebuild.make_plan(task, [])
    generated = rebuild.generated_dockerfile(plan, [f"FROM {rebuild.BASE_IMAGE}"])
    assert "COPY data.csv .\n" in generated
    whole = _task(tmp_path / "two", "FROM ubuntu:24.04\nWORKDIR /app\nCOPY . /app\n")
    with pytest.raises(SystemExit, match="copies the whole context"):
        rebuild.make_plan(whole, [])


@pytest.mark.unit
def test_a_step_that_printed_an_error_and_exited_zero_is_a_deviation() -> None:
    watch = rebuild.StepWatch()
    for chunk in ["Step 1/4 : FROM swe-residual-base:bookworm\n", " ---> abc\n",
                  "Step 2/4 : RUN . /tmp/swe-residual-rebuild/net.sh; git clone https://example/x && echo done\n",
                  " ---> Running in 1\n", "Cloning into 'x'...\nerror: unable to create file ", "data/aaaa: File name too long\n",
                  "fatal: unable to checkout working tree\ndone\n", " ---> def\n",
                  "Step 3/4 : RUN echo ERROR: is only text here\n", "ERROR: is only text here\n",
                  "Step 4/4 : WORKDIR /app\n"]:
        watch.feed(chunk)
    deviations = watch.deviations()
    assert len(deviations) == 2
    assert deviations[0].startswith("step 2 (RUN . /tmp/swe-residual-rebuild/net.sh; git clone")
    assert "File name too long" in deviations[0] and "fatal: unable to checkout" in deviations[0]
    # The detection is by what was printed, whatever the step meant: it errs on saying so.
    assert deviations[1].startswith("step 3 (RUN echo ERROR")
    clean = rebuild.StepWatch()
    clean.feed("Step 1/2 : RUN pip install x\nSuccessfully installed x\nStep 2/2 : CMD [\"bash\"]\n")
    assert clean.deviations() == []


def _git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True)


def test_a_submodule_clones_from_its_local_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The published `git clone --recurse-submodules URL`, with both URLs read from local mirrors
    through the script's own git settings (git refuses the file transport for submodules unless told)."""
    main_url, sub_url = "https://github.com/example/main", "https://github.com/example/sub"
    sub = tmp_path / "src" / "sub"
    sub.mkdir(parents=True)
    (sub / "lib.txt").write_text("from the submodule\n")
    assert _git("init", "-q", "-b", "main", cwd=sub).returncode == 0
    assert _git("add", ".", cwd=sub).returncode == 0 and _git("commit", "-qm", "sub", cwd=sub).returncode == 0
    main = tmp_path / "src" / "main"
    main.mkdir()
    assert _git("init", "-q", "-b", "main", cwd=main).returncode == 0
    (main / ".gitmodules").write_text(f'[submodule "vendor"]\n\tpath = vendor\n\turl = {sub_url}\n')
    head = _git("rev-parse", "HEAD", cwd=sub).stdout.strip()
    assert _git("update-index", "--add", "--cacheinfo", f"160000,{head},vendor", cwd=main).returncode == 0
    assert _git("add", ".gitmodules", cwd=main).returncode == 0 and _git("commit", "-qm", "main", cwd=main).returncode == 0
    # The build's directory, as prepare_context lays it out: one mirror per URL, sorted.
    build_dir = tmp_path / "build"
    monkeypatch.setattr(rebuild, "BUILD_DIR", str(build_dir))
    repos = {main_url: main, sub_url: sub}
    for index, url in enumerate(sorted(repos)):
        assert _git("clone", "-q", "--mirror", str(repos[url]), str(build_dir / "git" / f"{index}.git")).returncode == 0
    (build_dir / "env.sh").write_text(rebuild.git_script(repos))
    clone = subprocess.run(["bash", "-c", f". {build_dir}/env.sh && git clone -q --recurse-submodules {main_url} out"],
                           cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    assert clone.returncode == 0, clone.stderr
    assert (tmp_path / "out" / "vendor" / "lib.txt").read_text() == "from the submodule\n"


@docker_test
@pytest.mark.slow
def test_the_venv_stays_first_on_path_under_a_login_shell() -> None:
    """Built for real: with only `ENV PATH`, Debian's /etc/profile drops the venv in `bash -lc`;
    with the script's lines, the venv's pip is the one found."""
    from swe_residual.environments.docker.base_image import ensure_base_image

    base = ensure_base_image(progress=lambda line: print(line, file=sys.stderr))
    fake_venv = ("RUN mkdir -p /opt/venv/bin && printf '#!/bin/sh\\necho venv-pip\\n' > /opt/venv/bin/pip "
                 "&& chmod +x /opt/venv/bin/pip")
    check = "RUN bash -lc 'command -v pip' | tee /dev/stderr | grep -qx /opt/venv/bin/pip"
    lines = rebuild.venv_path_lines("/opt/venv")
    results = {}
    for name, path_lines in (("env only", lines[:1]), ("script", lines)):
        dockerfile = "\n".join([f"FROM {base}", fake_venv, *path_lines, check]) + "\n"
        tag = f"swe-residual-test-venv-path:{uuid.uuid4().hex[:8]}"
        built = subprocess.run(["docker", "build", "-q", "--rm", "--force-rm", "--label", "swe-residual.test=1",
                                "-t", tag, "-"], input=dockerfile, capture_output=True, text=True)
        results[name] = built.returncode
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
    assert results == {"env only": 1, "script": 0}


@docker_test
@pytest.mark.slow
def test_a_python_base_keeps_its_c_headers(tmp_path: Path) -> None:
    """Built for real: a task FROM a python:* image whose test builds a C extension (setuptools
    `build_ext` including Python.h, run by the `uvx` stand-in's Python) finds Python's headers,
    as on the published base and in the Pythons uv manages."""
    tag = f"example/swe-residual-test-headers:{uuid.uuid4().hex[:8]}"
    task = tmp_path / "headers"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text("FROM python:3.13-slim-bookworm\nWORKDIR /app\n")
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text("uvx -p 3.13 -w setuptools==80.9.0 pytest /tests/test_outputs.py\n")
    (task / "task.toml").write_text(f'[environment]\ndocker_image = "{tag}"\n')
    check = ("import os, sysconfig; header = os.path.join(sysconfig.get_paths()['include'], 'Python.h'); "
             "print(header, os.path.isfile(header))")
    try:
        built = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "rebuild-task-image"), str(task)],
                               capture_output=True, text=True)
        assert built.returncode == 0, built.stderr[-3000:]
        for python in ("python", "/opt/uvx-tools/bin/python"):
            found = subprocess.run(["docker", "run", "--rm", "--label", "swe-residual.test=1", tag, python, "-c", check],
                                   capture_output=True, text=True)
            assert found.stdout.strip().endswith("Python.h True"), (python, found.stdout, found.stderr)
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
