"""task.toml read with Harbor's schema (harbor 0.25): names, values, defaults, resolution, and
the reasoned rejections of what this suite cannot run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.image_recipes import ImageRecipe, find_recipe, load_recipes
from swe_residual.dataset.task import ArtifactSpec, CollectStep, VerifierEnvironment, load_task

pytestmark = pytest.mark.unit


def _task(root: Path, toml: str, name: str = "t") -> Path:
    task = root / name
    task.mkdir(parents=True, exist_ok=True)
    (task / "task.toml").write_text(textwrap.dedent(toml))
    (task / "instruction.md").write_text("Do it.\n")
    return task


def _config(tmp_path: Path, toml: str):
    return load_task(_task(tmp_path, toml)).config


def _error(tmp_path: Path, toml: str) -> DatasetError:
    task = _task(tmp_path, toml)
    with pytest.raises(DatasetError) as info:
        load_task(task)
    return info.value


# -- network ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("toml", "agent", "verifier"),
    [
        ("", "bridge", "bridge"),  # Harbor's default baseline: public
        ("[environment]\nnetwork_mode = 'no-network'\n", "none", "none"),
        ("[environment]\nnetwork_mode = 'public'\n", "bridge", "bridge"),
        ("[agent]\nnetwork_mode = 'no-network'\n", "none", "bridge"),
        ("[verifier]\nnetwork_mode = 'no-network'\n", "bridge", "none"),
        ("[environment]\nnetwork_mode = 'no-network'\n[agent]\nnetwork_mode = 'public'\n", "bridge", "none"),
        # the deprecated allow_internet, used only when network_mode is absent
        ("[environment]\nallow_internet = false\n", "none", "none"),
        ("[environment]\nallow_internet = false\nnetwork_mode = 'public'\n", "bridge", "bridge"),
        # a separate verifier's own environment is its baseline...
        ("[environment]\nnetwork_mode = 'no-network'\n[verifier.environment]\nnetwork_mode = 'public'\n",
         "none", "bridge"),
        # ...which the [verifier] phase override still beats
        ("[verifier]\nnetwork_mode = 'no-network'\n[verifier.environment]\ncpus = 2\n", "bridge", "none"),
        # without [verifier.environment] a separate verifier copies [environment]
        ("[environment]\nnetwork_mode = 'no-network'\n[verifier]\nenvironment_mode = 'separate'\n", "none", "none"),
    ],
)
def test_network_modes_resolve_as_harbor_does(tmp_path: Path, toml: str, agent: str, verifier: str) -> None:
    config = _config(tmp_path, toml)
    assert (config.agent_network_mode, config.verifier_network_mode) == (agent, verifier)


@pytest.mark.parametrize(("spelling", "harbor"), [("none", "no-network"), ("bridge", "public")])
@pytest.mark.parametrize("table", ["agent", "verifier", "environment", "verifier.environment"])
def test_docker_spellings_name_the_harbor_value(tmp_path: Path, table: str, spelling: str, harbor: str) -> None:
    error = _error(tmp_path, f"[{table}]\nnetwork_mode = '{spelling}'\n")
    assert error.path == tmp_path / "t" / "task.toml" and error.field == f"{table}.network_mode"
    assert f"Harbor's value is {harbor!r}" in str(error)


@pytest.mark.parametrize("table", ["agent", "verifier", "environment"])
def test_allowlist_is_rejected_not_run_open(tmp_path: Path, table: str) -> None:
    error = _error(tmp_path, f"[{table}]\nnetwork_mode = 'allowlist'\nallowed_hosts = ['pypi.org']\n")
    assert error.field == f"{table}.network_mode" and "cannot be enforced" in str(error)
    error = _error(tmp_path, f"[{table}]\nallowed_hosts = ['pypi.org']\n")
    assert error.field == f"{table}.allowed_hosts"


# -- verifier mode and environment -----------------------------------------------------------
@pytest.mark.parametrize(
    ("toml", "mode"),
    [
        ("", "shared"),
        ("[verifier]\nenvironment_mode = 'separate'\n", "separate"),
        ("[verifier.environment]\ncpus = 2\n", "separate"),
        ("[verifier]\nenvironment_mode = 'shared'\n", "shared"),
    ],
)
def test_environment_mode_resolution(tmp_path: Path, toml: str, mode: str) -> None:
    assert _config(tmp_path, toml).verifier_environment_mode == mode


def test_shared_mode_with_a_verifier_environment_is_a_contradiction(tmp_path: Path) -> None:
    error = _error(tmp_path, "[verifier]\nenvironment_mode = 'shared'\n[verifier.environment]\ncpus = 2\n")
    assert error.field == "verifier.environment_mode"


def test_verifier_environment_table(tmp_path: Path) -> None:
    config = _config(tmp_path, """\
        [environment]
        cpus = 1
        [verifier.environment]
        docker_image = "grader:2"
        cpus = 4
        memory_mb = 2048
        storage_mb = 4096
        build_timeout_sec = 300
        [verifier.environment.env]
        LEVEL = 3
    """)
    assert config.verifier_environment == VerifierEnvironment(
        docker_image="grader:2", cpus=4.0, memory_mb=2048, storage_mb=4096, build_timeout_sec=300.0,
        env={"LEVEL": "3"},
    )
    assert config.cpus == 1 and config.build_timeout_sec == 600.0  # Harbor's default
    assert _config(tmp_path / "other", "").verifier_environment is None


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ("[verifier.environment]\ncpus = 0\n", "verifier.environment.cpus"),
        ("[verifier.environment]\nmemory_mb = 'lots'\n", "verifier.environment.memory_mb"),
        ("[verifier.environment]\ngpus = 1\n", "verifier.environment.gpus"),
        ("[verifier]\nenvironment = 3\n", "verifier.environment"),
    ],
)
def test_verifier_environment_is_validated_like_environment(tmp_path: Path, toml: str, field: str) -> None:
    assert _error(tmp_path, toml).field == field


def test_deprecated_size_strings(tmp_path: Path) -> None:
    config = _config(tmp_path, "[environment]\nmemory = '2G'\nstorage = '512M'\n")
    assert (config.memory_mb, config.storage_mb) == (2048, 512)
    assert any("environment.memory is deprecated" in w for w in config.warnings)
    assert _error(tmp_path / "x", "[environment]\nmemory = '2G'\nmemory_mb = 1024\n").field == "environment.memory"


# -- artifacts and collect -------------------------------------------------------------------
def test_artifacts_as_strings_and_tables(tmp_path: Path) -> None:
    config = _config(tmp_path, """\
        artifacts = [
            "/logs/artifacts/model.patch",
            { source = "/app/out", destination = "out", exclude = ["*.tmp"] },
            { source = "/var/log/app.log", service = "main" },
        ]
    """)
    assert config.artifacts == (
        ArtifactSpec("/logs/artifacts/model.patch"),
        ArtifactSpec("/app/out", "out", ("*.tmp",)),
        ArtifactSpec("/var/log/app.log", None),
    )
    assert config.warnings == ()


@pytest.mark.parametrize(
    ("artifacts", "message"),
    [
        ('["relative/model.patch"]', "absolute"),
        ("[{ destination = 'x' }]", "source"),
        ("[{ source = '/a/../etc' }]", ".."),
        ("[{ source = '/a', destination = '/abs' }]", "relative"),
        ("[{ source = '/a', destination = 'manifest.json' }]", "manifest.json"),
        ("[{ source = '/a', service = 'db' }]", "multi-container"),
        ("[3]", "table"),
    ],
)
def test_bad_artifacts_name_the_entry(tmp_path: Path, artifacts: str, message: str) -> None:
    error = _error(tmp_path, f"artifacts = [\"/ok\", {artifacts[1:-1]}]\n")
    assert error.field == "artifacts[1]" and message in str(error)


def test_collect_steps_use_harbor_defaults(tmp_path: Path) -> None:
    config = _config(tmp_path, """\
        [[verifier.collect]]
        command = "git diff > /logs/artifacts/a.patch"
        [[verifier.collect]]
        command = "true"
        service = "main"
        user = "agent"
        timeout_sec = 5
    """)
    assert config.verifier_collect == (
        CollectStep("git diff > /logs/artifacts/a.patch", 60.0),
        CollectStep("true", 5.0, "agent"),
    )


def test_collect_in_another_service_is_rejected(tmp_path: Path) -> None:
    error = _error(tmp_path, "[[verifier.collect]]\ncommand = 'pg_dump'\nservice = 'db'\n")
    assert error.field == "verifier.collect[0]" and "only the main container" in str(error)


# -- what cannot run here ----------------------------------------------------------------------
def test_gpus_are_rejected(tmp_path: Path) -> None:
    error = _error(tmp_path, "[environment]\ngpus = 1\n")
    assert error.field == "environment.gpus" and "GPUs are not available to this suite" in str(error)
    assert _config(tmp_path / "zero", "[environment]\ngpus = 0\n").gpus == 0


@pytest.mark.parametrize("where", ["environment", "tests"])
def test_compose_files_are_rejected_naming_the_file(tmp_path: Path, where: str) -> None:
    task = _task(tmp_path, "")
    (task / where).mkdir()
    (task / where / "docker-compose.yaml").write_text("services: {}\n")
    with pytest.raises(DatasetError) as info:
        load_task(task)
    assert info.value.path == task / where / "docker-compose.yaml"
    assert "multi-container tasks cannot run on this engine here" in str(info.value)


def test_steps_and_windows_are_rejected(tmp_path: Path) -> None:
    assert _error(tmp_path, "[[steps]]\nname = 'one'\n").field == "steps"
    assert _error(tmp_path / "w", "[environment]\nos = 'windows'\n").field == "environment.os"


# -- unknown fields: ignored by Harbor, reported by `harbor lint`, warnings here ----------------
def test_unknown_fields_are_warnings_naming_file_and_field(tmp_path: Path) -> None:
    config = _config(tmp_path, """\
        flavour = "x"
        [metadata]
        anything = { goes = true }
        [agent]
        timeout_secs = 10
        [verifier]
        timeout_sec = 30
        [[verifier.collect]]
        command = "true"
        shell = "zsh"
        [environment]
        cpu = 2
        [environment.env]
        FREE_FORM = "yes"
    """)
    toml = tmp_path / "t" / "task.toml"
    assert config.verifier_timeout_sec == 30.0 and config.agent_timeout_sec == 600.0
    assert len(config.warnings) == 4
    assert all(w.startswith(f"{toml}: unknown field ") for w in config.warnings)
    joined = "\n".join(config.warnings)
    for name in ("flavour", "agent.timeout_secs", "verifier.collect[0].shell", "environment.cpu"):
        assert f"unknown field {name}" in joined
    assert "did you mean 'timeout_sec'?" in joined
    assert "metadata" not in joined and "FREE_FORM" not in joined


# -- images.toml -------------------------------------------------------------------------------
def _dataset_with_images(root: Path, images: str) -> Path:
    task = _task(root, "[environment]\ndocker_image = 'lib/one:1.0'\n", name="one")
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM scratch\n")
    (task / "environment" / "Other.dockerfile").write_text("FROM scratch\n")
    (root / "images.toml").write_text(textwrap.dedent(images))
    return task


def test_find_recipe(tmp_path: Path) -> None:
    task_dir = _dataset_with_images(tmp_path, """\
        [images."lib/one:1.0"]
        context = "one/environment"
        [images."lib/two:2"]
        context = "one/environment"
        dockerfile = "Other.dockerfile"
    """)
    task = load_task(task_dir)
    recipe = find_recipe(task, "lib/one:1.0")
    assert recipe == ImageRecipe(
        name="lib/one:1.0", context=(task_dir / "environment").resolve(),
        dockerfile=(task_dir / "environment" / "Dockerfile").resolve(), source=tmp_path / "images.toml",
    )
    assert find_recipe(task, "lib/two:2").dockerfile.name == "Other.dockerfile"
    assert find_recipe(task, "lib/three:3") is None
    (tmp_path / "images.toml").unlink()
    assert find_recipe(task, "lib/one:1.0") is None


@pytest.mark.parametrize(
    ("images", "field"),
    [
        ('[images."lib/one:1.0"]\ndockerfile = "Dockerfile"\n', 'images."lib/one:1.0".context'),
        ('[images."lib/one:1.0"]\ncontext = "/abs"\n', 'images."lib/one:1.0".context'),
        ('[images."lib/one:1.0"]\ncontext = "../elsewhere"\n', 'images."lib/one:1.0".context'),
        ('[images."lib/one:1.0"]\ncontext = "missing"\n', 'images."lib/one:1.0".context'),
        ('[images."lib/one:1.0"]\ncontext = "one/environment"\ndockerfile = "Nope"\n', 'images."lib/one:1.0".dockerfile'),
        ('[images."lib/one:1.0"]\ncontext = "one/environment"\ntag = "x"\n', 'images."lib/one:1.0".tag'),
        ('[images]\n"lib/one:1.0" = "one/environment"\n', 'images."lib/one:1.0"'),
        ('images = 3\n', "images"),
        ('[image."lib/one:1.0"]\ncontext = "one/environment"\n', "image"),
    ],
)
def test_malformed_images_toml_names_file_and_field(tmp_path: Path, images: str, field: str) -> None:
    task = load_task(_dataset_with_images(tmp_path, images))
    with pytest.raises(DatasetError) as info:
        find_recipe(task, "lib/one:1.0")
    assert info.value.path == tmp_path / "images.toml" and info.value.field == field


def test_sample_images_toml_builds_the_task_image() -> None:
    from conftest import REPO_ROOT

    sample = REPO_ROOT / "datasets" / "sample"
    recipes = load_recipes(sample / "images.toml")
    for task_dir in sorted(p.parent for p in sample.glob("*/task.toml")):
        task = load_task(task_dir)
        if task.config.docker_image is not None:
            assert find_recipe(task, task.config.docker_image) in recipes.values(), task.id
