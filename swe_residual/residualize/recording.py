"""Recording a machine-track run's terminal interactions (Stage I).

A machine's state is rebuilt by replaying what the predecessor sent to it, in order. The
recorder sits between the runner and the environment and writes down every `exec` (command, and
cwd when one was given) and every `write_file` (as a command that writes the same bytes), so an
agent that edits files through the session is replayed faithfully too. The verifier runs on the
unwrapped environment and is never recorded.

A command's timeout is kept only when it matters for the replay: a command that ran longer than
`LONG_COMMAND_SEC` keeps its deadline, and one that was killed at its deadline is marked
`timed_out` (the replay kills it at the same deadline and goes on).
"""

from __future__ import annotations

import base64
import shlex
from pathlib import Path
from typing import Any

from swe_residual.environments.base import ExecResult, StartSpec
from swe_residual.dataset.states.state import ResidualState
from swe_residual.dataset.task import Task

LONG_COMMAND_SEC = 300.0
WRITE_CHUNK_BYTES = 48 * 1024


class RecordingEnvironment:
    def __init__(self, inner: Any, log: list[dict[str, Any]]) -> None:
        self.inner = inner
        self.log = log

    def exec(self, command: str, *, timeout_sec: float | None = None, env: dict[str, str] | None = None,
             cwd: str | None = None) -> ExecResult:
        result: ExecResult = self.inner.exec(command, timeout_sec=timeout_sec, env=env, cwd=cwd)
        entry: dict[str, Any] = {"command": command}
        if cwd:
            entry["cwd"] = cwd
        if timeout_sec is not None and (result.timed_out or result.duration_sec > LONG_COMMAND_SEC):
            entry["timeout_sec"] = round(timeout_sec, 3)
        if result.timed_out:
            entry["timed_out"] = True
        self.log.append(entry)
        return result

    def read_file(self, path: str) -> bytes:
        data: bytes = self.inner.read_file(path)
        return data

    def write_file(self, path: str, data: bytes) -> None:
        self.inner.write_file(path, data)
        quoted = shlex.quote(path)
        self.log.append({"command": f"mkdir -p \"$(dirname -- {quoted})\" && : > {quoted}"})
        # In chunks: one command-line argument may not exceed 128 KiB on Linux.
        for offset in range(0, len(data), WRITE_CHUNK_BYTES):
            encoded = base64.b64encode(data[offset:offset + WRITE_CHUNK_BYTES]).decode()
            self.log.append({"command": f"echo {encoded} | base64 -d >> {quoted}"})

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class RecordingBackend:
    """A backend whose environments record their interactions into `log` (one run at a time)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.log: list[dict[str, Any]] = []

    def prepare(self, task: Task) -> None:
        self.inner.prepare(task)

    def start(self, task: Task, state: ResidualState | None, spec: StartSpec) -> Any:
        if spec.purpose != "agent":  # the harness's own start (a canary, a re-verification): not recorded
            return self.inner.start(task, state, spec)
        self.log = []  # a retried attempt starts a fresh machine: only its own interactions count
        return RecordingEnvironment(self.inner.start(task, state, spec), self.log)

    def run_verifier(self, environment: Any, task: Task, artifacts_dir: Path | None = None) -> Any:
        inner = environment.inner if isinstance(environment, RecordingEnvironment) else environment
        return self.inner.run_verifier(inner, task, artifacts_dir)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
