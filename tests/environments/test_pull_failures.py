"""What a failed pull means (swe_residual/environments/docker/pulls.py): the offline route only when
no registry answered at all; a registry's refusal is one clear error naming the task's file, the
field and the registry's answer, with the fixes. The real registry's side: test_image_pulls.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_residual.dataset.errors import DatasetError
from swe_residual.environments.docker.pulls import PullRefused, RegistryUnreachable, classify


@pytest.mark.unit
def test_a_pull_failure_is_unreachable_only_when_no_registry_answered() -> None:
    """The engine's words for each kind (as Docker 20.10 gives them)."""
    unreachable = [
        'Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.0.0.53:53: no such host',
        'Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused',
        'Get "https://example.test/v2/": net/http: TLS handshake timeout',
        'Get "https://example.test/v2/": dial tcp 10.1.2.3:443: i/o timeout',
    ]
    refused = [
        "manifest for 127.0.0.1:5000/x:no-such-tag not found: manifest unknown: manifest unknown",
        "pull access denied for private/x, repository does not exist or may require 'docker login': denied",
        "toomanyrequests: You have reached your pull rate limit.",
        "unauthorized: authentication required",
    ]
    assert all(isinstance(classify("x", answer), RegistryUnreachable) for answer in unreachable)
    assert all(type(classify("x", answer)) is PullRefused for answer in refused)


@pytest.mark.unit
def test_a_refused_pull_is_a_dataset_error_naming_the_file_field_and_answer(tmp_path: Path) -> None:
    from swe_residual.environments.docker.public_images import refused_error

    error = refused_error(tmp_path / "task.toml", "environment.docker_image", "x/y:1", "manifest unknown")
    assert isinstance(error, DatasetError)
    assert "task.toml" in str(error) and "environment.docker_image" in str(error)
    assert "the registry refused 'x/y:1': manifest unknown" in str(error)
    assert "docker login" in str(error)
