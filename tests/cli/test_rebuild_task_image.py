"""scripts/rebuild-task-image's Dockerfile rewriting (docs/real-tasks.md; issue 32): `COPY file .`
is a file copied as written, the venv's PATH survives a `RUN bash -lc` (built for real), git
submodules clone from local mirrors, a RUN step that printed an error yet exited 0 is a
`deviation:`, and each published FROM gets the Debian release its tag names, else the release
whose python3 is the tag's minor version (trixie for 3.13, bookworm for 3.11; the nearest, said
so, otherwise); when that release's python3 is not the tag's and Debian has the tag's source,
the tag's Python compiled on that release (python:3.13-slim-bookworm:
swe-residual-python:3.13-bookworm, no venv, said so)."""

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


# The FROM kinds of the published Terminal-Bench 2 tasks (and DeepSWE's mars-base): the stand-in's
# release, whether Python comes in a venv, and its deviation notes (empty: none).
NO_RELEASE = "which no Debian release here ships (bookworm 3.11, trixie 3.13): the nearest,"
COMPILED_313 = ("Python 3.13 is compiled without PGO/LTO from Debian's source package python3.13 (Debian's point "
                "release, Debian's patches not applied); Debian bookworm's python3 3.11 stays in /usr/bin")
FROM_KINDS = [
    ("python:3.13-slim-bookworm", "bookworm", False, [COMPILED_313]),
    ("python:3.13-slim", "trixie", True, []),
    ("python:3.11-slim", "bookworm", True, []),
    ("python:3.11", "bookworm", True, []),
    ("python:3.10-slim-bookworm", "bookworm", True,
     ["python:3.10-slim-bookworm is Debian bookworm with Python 3.10 built from source; the stand-in keeps "
      "Debian bookworm (what the Dockerfile apt-gets comes from it) with its python3 3.11"]),
    ("python:3.12-slim", "trixie", True, [f"python:3.12-slim has Python 3.12, {NO_RELEASE} Debian trixie's python3 3.13"]),
    ("python:3", "trixie", True, ["python:3 names no Python minor version: Debian trixie's python3 (3.13), the newest here"]),
    ("ubuntu:20.04", "bookworm", False,
     ["ubuntu:20.04: Debian bookworm stands in for Ubuntu (the suite makes stand-ins of Ubuntu 24.04, 22.04)"]),
    ("debian:13.0-slim", "trixie", False, []),
    ("debian:bookworm-slim", "bookworm", False, []),
    ("debian:11", "bookworm", False, ["debian:11: no base of that Debian release here: Debian bookworm"]),
    ("registry.example/team/mars-base:1", "bookworm", True, []),
]


@pytest.mark.unit
@pytest.mark.parametrize(("base_from", "release", "venv", "said"), FROM_KINDS)
def test_each_published_base_gets_its_release_and_says_how_it_deviates(
        base_from: str, release: str, venv: bool, said: list[str]) -> None:
    stand_in = rebuild.stand_in_for(base_from)
    assert (stand_in.release, stand_in.image, stand_in.python_venv) == (release, _image(base_from, release), venv)
    assert list(stand_in.deviations) == said


def _image(base_from: str, release: str) -> str:
    """The stand-in's image: Python compiled on the release's base when the release's python3
    is not the tag's version and Debian carries that version's source (3.13 on bookworm)."""
    return f"swe-residual-python:3.13-{release}" if base_from == "python:3.13-slim-bookworm" else f"swe-residual-base:{release}"


@pytest.mark.unit
@pytest.mark.parametrize(("base_from", "release", "venv", "said"), FROM_KINDS)
def test_the_generated_dockerfile_starts_from_the_stand_in_and_its_notes_name_base_and_python(
        tmp_path: Path, base_from: str, release: str, venv: bool, said: list[str]) -> None:
    task = _task(tmp_path / "task", f"FROM {base_from}\nWORKDIR /app\nRUN pip install numpy==2.3.0\n")
    plan = rebuild.make_plan(task, [])
    prelude, notes = rebuild.base_prelude(plan, "")
    generated = rebuild.generated_dockerfile(plan, prelude).splitlines()
    assert generated[0] == f"FROM {_image(base_from, release)}"
    assert f"RUN . {rebuild.BUILD_DIR}/net.sh; pip install numpy==2.3.0" in generated
    venv_lines = [line for line in generated if line.startswith("ENV PATH=/opt/venv/bin")]
    assert len(venv_lines) == (1 if venv else 0)
    compiled = plan.stand_in.python_build != ""
    python = "3.13" if compiled else {"bookworm": "3.11", "trixie": "3.13"}[release]
    # The last note is the stand-in's own: its base, its release and its Python.
    assert notes[:-1] == list(plan.stand_in.deviations)
    assert f"-> {_image(base_from, release)}" in notes[-1] and f"Debian {release}" in notes[-1]
    assert (f"CPython {python} built" if compiled else f"python3 {python}") in notes[-1]
    # The official python:*-slim* images have no procps: their stand-ins purge the bases' before
    # the task's own steps (a Dockerfile that installs procps gets it back), and the note says so.
    # Every other published base keeps it (python:3.11 has procps; the bases install it).
    slim = base_from.startswith("python:") and "slim" in base_from
    purges = [i for i, line in enumerate(generated) if "dpkg --purge procps" in line]
    assert len(purges) == (1 if slim else 0), generated
    assert not slim or purges[0] < generated.index(f"RUN . {rebuild.BUILD_DIR}/net.sh; pip install numpy==2.3.0")
    assert ("procps purged (ps, pkill, top, free), as the published slim image has none" in notes[-1]) == slim
    assert ("procps)" in notes[-1]) == (not slim and not venv)
    # What the engine says of the base's python3, once asked, replaces the release's version.
    found = rebuild.base_prelude(plan, "", "Python 3.13.5")[1][-1]
    assert ("CPython 3.13.5 built" if compiled else "its Python 3.13.5 (with its C headers)" if venv
            else "the base also has Python 3.13.5") in found


@pytest.mark.unit
def test_release_by_hand_trades_the_published_system_for_its_python_and_says_so(tmp_path: Path) -> None:
    """`--release trixie` for a python:3.13-slim-bookworm task that needs Python 3.13 more than
    bookworm's packages: trixie's python3 3.13, and the deviation that its system is not bookworm's."""
    task = _task(tmp_path / "task", "FROM python:3.13-slim-bookworm\nRUN apt-get install -y openssl\n")
    plan = rebuild.make_plan(task, [], "trixie")
    assert plan.stand_in == rebuild.StandIn("trixie", True, (
        "python:3.13-slim-bookworm is Debian bookworm with its own Python build; the stand-in is Debian trixie "
        "(for its python3): what the Dockerfile apt-gets comes from trixie",))
    # A release whose python3 is not the tag's: the tag's version compiled on that release.
    assert rebuild.make_plan(_task(tmp_path / "t2", "FROM python:3.11-slim\n"), [], "trixie").stand_in == rebuild.StandIn(
        "trixie", False, ("python:3.11-slim: --release trixie: Debian trixie instead of bookworm (what the Dockerfile "
                          "apt-gets comes from trixie)",
                          "Python 3.11 is compiled without PGO/LTO from Debian's source package python3.11 (Debian's "
                          "point release, Debian's patches not applied); Debian trixie's python3 3.13 stays in /usr/bin"),
        "3.11")
    # The tag's own release by hand: as without --release.
    assert rebuild.stand_in_for("python:3.13-slim-bookworm", "bookworm") == rebuild.stand_in_for("python:3.13-slim-bookworm")
    assert rebuild.stand_in_for("ubuntu:24.04", "trixie").deviations == (
        "ubuntu:24.04: Debian bookworm stands in for Ubuntu", "--release trixie: Debian trixie instead of bookworm")
    assert rebuild.stand_in_for("debian:13.0-slim", "trixie") == rebuild.StandIn("trixie", False)
    with pytest.raises(rebuild.RebuildError, match="--release buster: one of bookworm, trixie"):
        rebuild.stand_in_for("ubuntu:24.04", "buster")


@pytest.mark.unit
def test_a_compiled_python_stands_in_without_a_venv_and_keeps_poetry_and_uvx(tmp_path: Path) -> None:
    """python:3.13-slim-bookworm: bookworm with CPython 3.13 compiled into /usr/local
    (swe-residual-python:3.13-bookworm), pip and python on PATH there, no venv; a Dockerfile that
    calls poetry gets it, and test.sh's uvx tools install with that Python (curl from Debian only)."""
    task = _task(tmp_path / "task", "FROM python:3.13-slim-bookworm\nWORKDIR /app\nRUN poetry install\n")
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text("uvx -p 3.13 -w pytest==8.4.1 pytest /tests/test_outputs.py\n")
    plan = rebuild.make_plan(task, [])
    assert plan.stand_in == rebuild.StandIn("bookworm", False, (COMPILED_313,), "3.13")
    assert plan.stand_in.build_command == "swe-residual build-base --release bookworm --python 3.13"
    prelude, notes = rebuild.base_prelude(plan, "RUN poetry install\n", "Python 3.13.5")
    generated = rebuild.generated_dockerfile(plan, prelude)
    lines = generated.splitlines()
    assert lines[0] == "FROM swe-residual-python:3.13-bookworm"
    assert "/opt/venv" not in generated and "python3-venv" not in generated and "python3-dev" not in generated
    assert any("python3 -m venv /opt/poetry" in line for line in lines)
    assert f"RUN . {rebuild.BUILD_DIR}/net.sh; apt-get update && apt-get install -y --no-install-recommends curl " \
           "&& rm -rf /var/lib/apt/lists/*" in lines
    assert any(line.startswith(f"RUN . {rebuild.BUILD_DIR}/net.sh; python3 -m venv /opt/uvx-tools && "
                               "/opt/uvx-tools/bin/pip install pytest==8.4.1 && install -m 0755 ") for line in lines), lines
    assert notes[-1] == ("python:3.13-slim-bookworm -> swe-residual-python:3.13-bookworm (Debian bookworm + CPython "
                         "3.13.5 built from Debian's source package python3.13 (upstream tarball, Debian's patches not "
                         "applied), without PGO/LTO, in /usr/local with its pip and C headers, no venv, poetry from PyPI "
                         "in its own venv at /opt/poetry, on PATH; the base also has python3-pytest, git, patch; "
                         "procps purged (ps, pkill, top, free), as the published slim image has none)")
    assert lines[1:4] == ["COPY _swe_residual_rebuild/net/ /tmp/swe-residual-rebuild/",
                          "ARG DEBIAN_FRONTEND=noninteractive", "RUN dpkg --purge procps"], lines
    assert rebuild.image_labels(plan, "Python 3.13.5")["swe-residual.rebuild.base"] == "swe-residual-python:3.13-bookworm"


@pytest.mark.unit
def test_the_image_labels_record_the_stand_in_and_its_python(tmp_path: Path) -> None:
    plan = rebuild.make_plan(_task(tmp_path / "task", "FROM python:3.13-slim\n"), [])
    labels = rebuild.image_labels(plan, "Python 3.13.5")
    # It stands in for the task's published image, by hand as on the backend's offline route: not
    # for the public image its base stood in for (a label FROM would pass on).
    assert labels == {"swe-residual.rebuild": "1", "swe-residual.rebuild.task": "task",
                      "swe-residual.rebuild.base": "swe-residual-base:trixie", "swe-residual.rebuild.python": "3.13.5",
                      "swe-residual.stand-in": "example/task:1",
                      "swe-residual.stand-in.how": "the task's environment/Dockerfile with FROM python:3.13-slim "
                                                   "replaced by swe-residual-base:trixie"}
    assert rebuild.image_labels(plan, "")["swe-residual.rebuild.python"] == "3.13"


@pytest.mark.parametrize(("base_from", "stand_in"), [("python:3.13-slim", "swe-residual-base:trixie"),
                                                    ("python:3.13-slim-bookworm", "swe-residual-python:3.13-bookworm")])
def test_print_dockerfile_needs_no_engine(tmp_path: Path, base_from: str, stand_in: str) -> None:
    """`--print-dockerfile` as run by hand (the guard fails this test if it reaches an engine)."""
    task = _task(tmp_path / "task", f"FROM {base_from}\nWORKDIR /app\nCOPY data.csv .\n")
    done = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "rebuild-task-image"), "--print-dockerfile",
                           str(task)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("[rebuild] pip settings from the host")
    assert lines[1] == f"FROM {stand_in}" and "COPY data.csv ." in lines


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
    generated = rebuild.generated_dockerfile(plan, [f"FROM {plan.stand_in.image}"])
    assert "COPY data.csv .\n" in generated
    whole = _task(tmp_path / "two", "FROM ubuntu:24.04\nWORKDIR /app\nCOPY . /app\n")
    with pytest.raises(rebuild.RebuildError, match="copies the whole context"):
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
    # The script's names are the product module's (swe_residual/environments/docker/rebuild.py): patched there.
    monkeypatch.setattr(sys.modules[rebuild.git_script.__module__], "BUILD_DIR", str(build_dir))
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
def test_a_python_base_keeps_its_c_headers_and_its_venv_first_on_path(tmp_path: Path) -> None:
    """Built for real: a task FROM a python:* image whose test builds a C extension (setuptools
    `build_ext` including Python.h, run by the `uvx` stand-in's Python) finds Python's headers,
    as on the published base and in the Pythons uv manages. In the same image (one build: the
    Python base's apt steps are the costly part), the venv stays first on PATH under a login
    shell: with only `ENV PATH`, Debian's /etc/profile drops it in `bash -lc`; with the script's
    lines, the venv's pip is the one found; and there is no `ps`, as in the published slim image."""
    tag = f"example/swe-residual-test-headers:{uuid.uuid4().hex[:8]}"
    task = tmp_path / "headers"
    (task / "environment").mkdir(parents=True)
    # python:3.11 stands in with bookworm, the base the other docker tests build (trixie, for 3.13,
    # would be one more debootstrap in CI for the same apt packages).
    (task / "environment" / "Dockerfile").write_text("FROM python:3.11-slim\nWORKDIR /app\n")
    (task / "tests").mkdir()
    (task / "tests" / "test.sh").write_text("uvx -p 3.11 -w setuptools==80.9.0 pytest /tests/test_outputs.py\n")
    (task / "task.toml").write_text(f'[environment]\ndocker_image = "{tag}"\n')
    # The image holds the script's venv lines: `ENV PATH` first, then the login shells' profile line.
    lines = rebuild.venv_path_lines("/opt/venv")
    plan = rebuild.make_plan(task, [])
    generated = rebuild.generated_dockerfile(plan, rebuild.base_prelude(plan, "")[0]).splitlines()
    assert all(line in generated for line in lines), generated
    # One apt step for the venv stand-in and test.sh's uvx alike (curl with the Python packages):
    # an index fetch and a layer fewer than one step each.
    apt = [line for line in generated if "apt-get install" in line]
    assert len(apt) == 1 and all(f" {name}" in apt[0] for name in ("python3-dev", "python3-venv", "curl")), generated
    profile = lines[1].rsplit("> ", 1)[1]
    assert profile.startswith("/etc/profile.d/"), lines
    check = ("import os, sysconfig; header = os.path.join(sysconfig.get_paths()['include'], 'Python.h'); "
             "print(header, os.path.isfile(header))")
    # One container asks it all: each Python's headers, `bash -lc`'s pip with the script's lines,
    # then with `ENV PATH` only (the profile line removed).
    # And, a slim image's stand-in, no `ps`: the published python:*-slim images have no procps.
    script = ('for python in python /opt/uvx-tools/bin/python; do echo "$python: $("$python" -c "$0" 2>&1)"; done; '
              'echo "ps: $(command -v ps || echo none)"; '
              'echo "script: $(bash -lc "command -v pip")"; rm "$1"; echo "env only: $(bash -lc "command -v pip")"')
    try:
        built = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "rebuild-task-image"), str(task)],
                               capture_output=True, text=True)
        assert built.returncode == 0, built.stderr[-3000:]
        found = subprocess.run(["docker", "run", "--rm", "--label", "swe-residual.test=1", tag, "bash", "-c", script,
                                check, profile], capture_output=True, text=True)
        said = dict(line.split(": ", 1) for line in found.stdout.splitlines() if ": " in line)
        for python in ("python", "/opt/uvx-tools/bin/python"):
            assert said.get(python, "").strip().endswith("Python.h True"), (python, found.stdout, found.stderr)
        assert said.get("ps") == "none", (found.stdout, found.stderr)
        assert said.get("script") == "/opt/venv/bin/pip", (found.stdout, found.stderr)
        assert "env only" in said and said["env only"] != "/opt/venv/bin/pip", (found.stdout, found.stderr)
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


@pytest.mark.unit
def test_a_dockerfile_without_run_steps_gets_none_of_the_builds_own_files(tmp_path: Path) -> None:
    """The suite's offline stand-in of such a task is its FROM, its own steps and nothing more."""
    plan = rebuild.make_plan(_task(tmp_path / "task", "FROM debian:bookworm-slim\nWORKDIR /app\n"), [])
    prelude, _ = rebuild.base_prelude(plan, "")
    assert rebuild.generated_dockerfile(plan, prelude) == \
"FROM swe-residual-base:bookworm\nWORKDIR /app\n"
    # A slim python image's stand-in purges procps, which needs none of the build's files either.
    plan = rebuild.make_plan(_task(tmp_path / "slim", "FROM python:3.13-slim-bookworm\nWORKDIR /app\n"), [])
    prelude, _ = rebuild.base_prelude(plan, "")
    assert rebuild.generated_dockerfile(plan, prelude) == \
"FROM swe-residual-python:3.13-bookworm\nRUN dpkg --purge procps\nWORKDIR /app\n"


def test_python_home_copies_one_installation_without_its_packages_and_tests(tmp_path: Path) -> None:
    """`--python-home PREFIX` (a base whose Python Debian neither ships nor has the source of,
    DeepSWE's mars-base with 3.12): the installation goes into the stand-in at its own path, its
    site-packages and test suites left out, the venv made from it, and the notes say whose Python
    it is. What is not one installation is refused with the reason."""
    from swe_residual.environments.docker import local_python

    prefix = tmp_path / "py312"
    for made in ("bin/python3", "lib/python3.12/json/__init__.py", "lib/python3.12/site-packages/host_pkg/x.py",
                 "lib/python3.12/test/test_x.py", "lib/python3.12/idlelib/idle_test/t.py",
                 "lib/python3.12/ensurepip/_bundled/pip.whl", "include/python3.12/Python.h"):
        (prefix / made).parent.mkdir(parents=True, exist_ok=True)
        (prefix / made).write_text("x")
    found = local_python.LocalPython(str(prefix), "3.12.1")
    task = _task(tmp_path / "task", "FROM public.ecr.aws/x/mars-base:latest\nRUN pip install attrs\n")
    plan = rebuild.make_plan(task, [])
    plan.stand_in = rebuild.StandIn(plan.stand_in.release, True, local_python=found)
    context = tmp_path / "context"
    dockerfile = (context / rebuild.prepare_context(plan, context, progress=lambda _: None)).read_text()
    copied = context / rebuild.CONTEXT_DIR / "python"
    assert sorted(str(p.relative_to(copied)) for p in copied.rglob("*") if p.is_file()) == [
        "bin/python3", "include/python3.12/Python.h", "lib/python3.12/ensurepip/_bundled/pip.whl",
        "lib/python3.12/json/__init__.py"]
    assert (copied / "lib/python3.12/site-packages").is_dir()
    lines = dockerfile.splitlines()
    assert lines[lines.index(f"COPY {rebuild.CONTEXT_DIR}/python/ {prefix}/") + 1].endswith(
        f"{prefix}/bin/python3.12 -m venv /opt/venv")
    assert lines.index("ENV PATH=/opt/venv/bin:$PATH VIRTUAL_ENV=/opt/venv") < lines.index(
        "RUN . /tmp/swe-residual-rebuild/net.sh; pip install attrs")
    assert "apt-get install" not in dockerfile  # Debian's python3 is not the venv's
    assert any(f"CPython 3.12.1 copied from this machine's {prefix}" in note for note in plan.notes)
    assert rebuild.image_labels(plan, "Python 3.11.2")[f"{rebuild.LABEL}.python"] == "3.12.1"

    for home, reason in ((Path("/usr"), "a system prefix"), (tmp_path / "task", "no bin/python3")):
        with pytest.raises(rebuild.RebuildError, match=reason):
            rebuild.make_plan(task, [], python_home=home)
    # A base that gives no Python has nothing for one to stand in for.
    with pytest.raises(rebuild.RebuildError, match="gives no Python"):
        rebuild.make_plan(_task(tmp_path / "deb", "FROM debian:bookworm-slim\n"), [], python_home=prefix)


def test_python_home_refuses_a_link_or_a_virtual_environment(tmp_path: Path) -> None:
    """The interpreter at PREFIX/bin/python3 is asked its prefix: a link to another installation's
    interpreter, or a virtual environment, is not an installation to copy."""
    task = _task(tmp_path / "task", "FROM public.ecr.aws/x/mars-base:latest\n")
    linked = tmp_path / "linked"
    (linked / "bin").mkdir(parents=True)
    (linked / "bin" / "python3").symlink_to(sys.executable)
    with pytest.raises(rebuild.RebuildError, match="a link to another installation|a virtual environment"):
        rebuild.make_plan(task, [], python_home=linked)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    with pytest.raises(rebuild.RebuildError, match="a virtual environment"):
        rebuild.make_plan(task, [], python_home=tmp_path / "venv")
