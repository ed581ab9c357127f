"""The dataset loader: real Harbor records, the sample dataset, and malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO_ROOT, TESTS_DIR
from taskfactory import make_task

from swe_residual.dataset.load import load_dataset
from swe_residual.dataset.errors import DatasetError
from swe_residual.dataset.task import ArtifactSpec, VerifierEnvironment, load_task

# Two real DeepSWE v1.1 records (data files only, Apache-2.0; see tests/data/deepswe/README.md).
DEEPSWE = TESTS_DIR / "data" / "deepswe"


@pytest.mark.unit
def test_deepswe_records_load_with_every_field() -> None:
    task = load_task(DEEPSWE / "onedump-dump-encryption-pipeline")
    config = task.config
    assert task.id == "onedump-dump-encryption-pipeline"
    assert config.schema_version == "1.3"
    assert config.name == "datacurve/onedump-dump-encryption-pipeline"
    assert config.artifacts == (ArtifactSpec("/logs/artifacts/model.patch"),)
    assert config.metadata["language"] == "go"
    assert config.metadata["category"] == "feature_request"
    assert config.base_commit == "a48e806195c538a73b6916b281939577b370952d"
    assert config.docker_image is not None and config.docker_image.endswith("-v1.1")
    assert config.verifier_environment_mode == "separate"
    # [agent]/[verifier] network_mode = "no-network" override the public baseline.
    assert config.verifier_network_mode == "none" and config.agent_network_mode == "none"
    assert config.verifier_environment == VerifierEnvironment(
        docker_image=None, cpus=2, memory_mb=8192, storage_mb=20480, build_timeout_sec=1800.0, env={},
    )
    assert config.warnings == ()
    assert config.verifier_timeout_sec == 1800.0 and config.agent_timeout_sec == 5400.0
    assert config.cpus == 2 and config.memory_mb == 8192 and config.storage_mb == 20480 and config.gpus == 0
    assert config.build_timeout_sec == 1800.0
    assert len(config.verifier_collect) == 1
    assert config.verifier_collect[0].timeout_sec == 300.0
    assert "git diff --binary a48e806195c538a73b6916b281939577b370952d HEAD" in config.verifier_collect[0].command
    assert config.raw["verifier"]["environment"]["memory_mb"] == 8192
    assert config.raw["environment"]["mcp_servers"] == []
    assert task.instruction.startswith("Create package encryption.")
    assert task.track == "repo"


@pytest.mark.unit
def test_deepswe_records_name_the_files_they_lack() -> None:
    dataset = load_dataset(DEEPSWE)
    assert sorted(e.task.id for e in dataset.entries) == [
        "onedump-dump-encryption-pipeline", "vulture-persistent-analysis-cache",
    ]
    assert dataset.task_errors == []
    for entry in dataset.entries:
        missing = entry.task.missing_files()
        assert "tests/test.sh" in missing and "solution/" in missing
        acceptance = entry.task.acceptance_tests()
        assert acceptance and all(isinstance(t, str) for t in acceptance)
    vulture = dataset.entry("vulture-persistent-analysis-cache").task
    assert "tests.test_cache.test_cache_cleans_up_renamed_files" in (vulture.acceptance_tests() or [])


@pytest.mark.unit
def test_sample_dataset_loads_cleanly() -> None:
    dataset = load_dataset(REPO_ROOT / "datasets" / "sample")
    assert dataset.task_errors == []
    assert all(entry.state_errors == [] for entry in dataset.entries)
    assert len(dataset.entries) >= 8
    assert all(entry.task.config.warnings == () for entry in dataset.entries)
    assert all(entry.task.missing_files() == [] for entry in dataset.entries)
    predecessors = {state.predecessor for entry in dataset.entries for state in entry.states}
    assert len(predecessors) >= 2
    assert all(1 <= len(entry.states) <= 3 for entry in dataset.entries if entry.task.track == "repo")


@pytest.mark.unit
@pytest.mark.parametrize(
    ("toml", "field", "message"),
    [
        ("[agent]\ntimeout_sec = 'soon'\n", "agent.timeout_sec", "expected"),
        ("[metadata]\ntrack = 'mainframe'\n", "metadata.track", "unknown track"),
        ("[verifier]\nenvironment_mode = 'nearby'\n", "verifier.environment_mode", "unknown environment mode"),
        ("[environment]\nmemory_mb = true\n", "environment.memory_mb", "expected"),
        ("[agent]\nnetwork_mode = 'wifi'\n", "agent.network_mode", "unknown network mode"),
        ("[agent]\nnetwork_mode = 'none'\n", "agent.network_mode", "'no-network'"),
        ("[[verifier.collect]]\ntimeout_sec = 3\n", "verifier.collect[0]", "command"),
        ("agent = 3\n", "agent", "must be a table"),
        ("[environment]\ncpus = 0\n", "environment.cpus", "greater than 0"),
        ("[environment]\nmemory_mb = -512\n", "environment.memory_mb", "greater than 0"),
        ("[agent]\ntimeout_sec = 0\n", "agent.timeout_sec", "greater than 0"),
        ("[metadata]\nworkdir = 'app'\n", "metadata.workdir", "absolute path"),
    ],
)
def test_bad_task_toml_names_file_and_field(tmp_path: Path, toml: str, field: str, message: str) -> None:
    task = tmp_path / "bad"
    task.mkdir()
    (task / "task.toml").write_text(toml)
    (task / "instruction.md").write_text("Do it.\n")
    with pytest.raises(DatasetError) as info:
        load_task(task)
    assert info.value.path == task / "task.toml"
    assert info.value.field == field
    assert message in str(info.value)


def test_malformed_toml_and_missing_instruction(tmp_path: Path) -> None:
    make_task(tmp_path, "good")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "task.toml").write_text("[agent\n")
    (broken / "instruction.md").write_text("x\n")
    silent = tmp_path / "silent"
    silent.mkdir()
    (silent / "task.toml").write_text("")
    dataset = load_dataset(tmp_path)
    assert [e.task.id for e in dataset.entries] == ["good"]
    errors = dict(dataset.task_errors)
    assert "malformed TOML" in str(errors["broken"]) and str(broken / "task.toml") in str(errors["broken"])
    assert "instruction.md" in str(errors["silent"]) and "missing" in str(errors["silent"])


def test_bad_states_are_isolated(tmp_path: Path) -> None:
    task = make_task(tmp_path, states={"drafter-1": {"calc.py": "x = 1\n"}, "patcher-1": {"calc.py": "y = 2\n"}})
    (task / "residual" / "patcher-1" / "state.toml").write_text('predecessor = "patcher"\ntrack = "tape"\n')
    odd = task / "residual" / "skimmer-1"
    odd.mkdir()
    (odd / "state.toml").write_text('predecessor = "skimmer"\n')  # no changes.patch
    entry = load_dataset(tmp_path).entries[0]
    assert [s.id for s in entry.states] == ["drafter-1"]
    errors = dict(entry.state_errors)
    assert errors["patcher-1"].field == "track" and "unknown track 'tape'" in str(errors["patcher-1"])
    assert errors["skimmer-1"].field == "patch" and "changes.patch" in str(errors["skimmer-1"])


def test_state_validation_statuses_are_checked(tmp_path: Path) -> None:
    task = make_task(tmp_path)
    state_toml = task / "residual" / "drafter-1" / "state.toml"
    state_toml.write_text(state_toml.read_text().replace('"failed"', '"meh"'))
    entry = load_dataset(tmp_path).entries[0]
    (name, error), = entry.state_errors
    assert name == "drafter-1" and error.field == "validation.tests"


@pytest.mark.parametrize("value, accepted", [("0", 0.0), ("0.0", 0.0), ("12.5", 12.5), ("-1", None), ("-0.5", None)])
def test_prior_attempt_duration_may_be_zero_never_negative(tmp_path: Path, value: str, accepted: float | None) -> None:
    """A hand-made state (or a predecessor that stopped at once) took 0 seconds: that is valid."""
    task = make_task(tmp_path)
    state_toml = task / "residual" / "drafter-1" / "state.toml"
    state_toml.write_text(state_toml.read_text().replace(
        "[validation]\n", f"[prior_attempt]\nsteps = 0\nduration_sec = {value}\n[validation]\n"))
    entry = load_dataset(tmp_path).entries[0]
    if accepted is not None:
        (state,) = entry.states
        assert state.prior_duration_sec == accepted and state.prior_steps == 0
    else:
        (name, error), = entry.state_errors
        assert name == "drafter-1" and error.field == "prior_attempt.duration_sec"
        assert error.path == state_toml and f"must be 0 or greater, got {value}" in str(error)
