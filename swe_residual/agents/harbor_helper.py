"""The Harbor side of `--agent=harbor:NAME`: run with Harbor's own Python, never imported by the suite.

Harbor needs Python >= 3.12 and the suite runs on 3.11, so the suite starts this file as a
process of Harbor's virtual environment (`swe_residual.agents.harbor_bridge`). It builds
Harbor's agent class unmodified, gives it a `BaseEnvironment` whose every operation goes to
the suite's own container (by id, through the `docker` CLI: Harbor's environment may lack the
Docker SDK), and runs it as a Harbor trial does: the trial's directories (/logs/agent,
/logs/verifier, /logs/artifacts) made in the container, setup() under its own timeout, run()
under the task's agent timeout. It leaves the agent's logs directory (`LOGS/trial/agent/`: its
ATIF `trajectory.json` and a copy of what it left in /logs/agent), the timings of setup() and
run() (`LOGS/phases.json`) and its context (`LOGS/result.json`: tokens, cost, whether run()
timed out, or the error) for the suite. The container is the suite's: start and stop do nothing.

What an agent needs installed is installed before any measured run, in the suite's set-up
container (with network), which the suite then commits as a layer under the agent's starts:
- an installed agent (claude-code, codex, mini-swe-agent, ...): its own `setup()`, which runs
  its `install()`; its measured runs then skip it and run its command only;
- Terminus-2: the tmux (and, when it records, asciinema) its tmux session installs at start,
  by that session's own install routine, so the measured run finds them and installs nothing.

Usage: python harbor_helper.py --check NAME [MODEL [KWARGS-JSON]] (prints why the agent cannot
run, or null, what it needs installed, its setup timeout and the credentials its model lacks),
or python harbor_helper.py REQUEST.json, where the request holds `mode` ("install" or "run"),
`container`, `agent`, `kwargs`, `instruction`, `logs_dir`, `workdir`, `session_id` and
`timeout_sec` (run()'s), or python harbor_helper.py --warm NAME, which imports Harbor first and
then reads that request's path from stdin (`serve_warm`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import time
import traceback
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

EXEC_TIMEOUT_CODE = 124  # what `timeout` exits with: a command that ran out of its time


async def _docker(*args: str, timeout_sec: float | None = None, stdin: bytes | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        "docker", *args, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin), timeout=timeout_sec)
    except asyncio.TimeoutError:
        process.kill()
        out, err = await process.communicate()
        return EXEC_TIMEOUT_CODE, out.decode(errors="replace"), err.decode(errors="replace") + "\n[timed out]"
    return process.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


def make_environment_class() -> type:
    """Harbor's `BaseEnvironment` over one running container, named by id."""
    from harbor.environments.base import BaseEnvironment, ExecResult

    class SuiteContainer(BaseEnvironment):
        def __init__(self, container: str, workdir: str, **kwargs: Any) -> None:
            self.container, self.workdir = container, workdir
            super().__init__(**kwargs)

        @staticmethod
        def type() -> str:
            return "swe-residual-container"

        def _validate_definition(self) -> None:
            pass  # the suite built and started the container: there is no definition to check

        async def start(self, force_build: bool) -> None:
            pass  # the suite's

        async def stop(self, delete: bool) -> None:
            pass  # the suite's

        async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                       timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
            args = ["exec", "-w", cwd or self.workdir]
            for key, value in (self._merge_env(env) or {}).items():
                args += ["-e", f"{key}={value}"]
            resolved = self._resolve_user(user)
            if resolved is not None:
                args += ["-u", str(resolved)]
            code, out, err = await _docker(*args, self.container, "bash", "-c", command, timeout_sec=timeout_sec)
            return ExecResult(stdout=out, stderr=err, return_code=code)

        async def _mkdir(self, path: str) -> None:
            await _docker("exec", self.container, "mkdir", "-p", path)

        async def upload_file(self, source_path: Path | str, target_path: str) -> None:
            await self._mkdir(os.path.dirname(target_path) or "/")
            await self._checked("cp", str(source_path), f"{self.container}:{target_path}")

        async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
            await self._mkdir(target_dir)
            await self._checked("cp", f"{source_dir}/.", f"{self.container}:{target_dir}")

        async def download_file(self, source_path: str, target_path: Path | str) -> None:
            Path(target_path).parent.mkdir(parents=True, exist_ok=True)
            await self._checked("cp", f"{self.container}:{source_path}", str(target_path))

        async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
            Path(target_dir).mkdir(parents=True, exist_ok=True)
            await self._checked("cp", f"{self.container}:{source_dir}/.", str(target_dir))

        @staticmethod
        async def _checked(*args: str) -> None:
            code, _, err = await _docker(*args, timeout_sec=600)
            if code != 0:
                raise RuntimeError(f"docker {' '.join(args)}: {err.strip()}")

    return SuiteContainer


INSTALLED, TERMINAL = "installed", "tmux"  # what an agent needs installed (see the module's doc)


def agent_class(name: str) -> type:
    from harbor.agents.factory import AgentFactory
    from harbor.models.agent.name import AgentName

    return AgentFactory.get_agent_class(AgentName(name))


def needs_install(cls: type) -> str | None:
    """INSTALLED, TERMINAL or None: what the agent class needs installed before it runs."""
    from harbor.agents.installed.base import BaseInstalledAgent
    from harbor.agents.terminus_2.terminus_2 import Terminus2

    if issubclass(cls, BaseInstalledAgent):
        return INSTALLED
    if issubclass(cls, Terminus2):
        return TERMINAL
    return None


def usable(name: str) -> str | None:
    """Why Harbor's agent `name` cannot run on the bridge, or None."""
    from harbor.models.agent.name import AgentName

    if name not in AgentName.values():
        return f"Harbor has no agent {name!r} (known: {', '.join(sorted(AgentName.values()))})"
    try:
        agent_class(name)
    except (ValueError, ImportError) as exc:  # a name Harbor lists without a class of its own
        return f"Harbor cannot make its agent {name!r}: {exc}"
    return None


# Installed agents whose credentials Harbor leaves to the vendor's own login (its preflight
# passes without a key), which a suite container never has: with the vendor's own models, one
# of these variables must be set.
LOGIN_KEYS = {
    "claude-code": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "gemini-cli": ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"),
}


def missing_credentials(name: str, model: str | None, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """What the agent lacks to reach its model, by Harbor's own preflight (the credentials each
    agent class declares, and litellm's for Terminus-2) and `LOGIN_KEYS`; None when nothing.
    Only presence is checked: nothing is sent anywhere."""
    from harbor.agents.agent_auth_resolution import MissingModelCredentialError
    from harbor.agents.factory import AgentFactory
    from harbor.models.trial.config import AgentConfig

    try:
        AgentFactory.run_preflight(AgentConfig(name=name, model_name=model, kwargs=kwargs))
    except MissingModelCredentialError as exc:
        message = str(exc)
        named = re.search(r"\b[Ss]et ([A-Z][A-Z0-9_]*(?: or [A-Z][A-Z0-9_]*)*)", message)
        return {"variables": named.group(1).split(" or ") if named else [], "message": message}
    except (ValueError, TypeError):
        return None  # a bad option: the agent's own error when it runs, as before
    login = LOGIN_KEYS.get(name)
    default = getattr(getattr(agent_class(name), "MODEL_CONNECTION", None), "default_provider", None)
    vendors_model = model is None or "/" not in model or model.split("/", 1)[0] == default
    if login and vendors_model and not any(os.environ.get(variable) for variable in login):
        return {"variables": list(login), "message": f"{name} logs in with one of {', '.join(login)}"}
    return None


def check(name: str, model: str | None = None, kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    import importlib.metadata

    why = usable(name)
    found: dict[str, Any] = {"error": why, "harbor": importlib.metadata.version("harbor")}
    if why is None:
        found["install"] = needs_install(agent_class(name))
        # What Harbor's trial gives setup() unless told otherwise (harbor/trial/trial.py:1716-1725).
        found["setup_timeout_sec"] = agent_class(name).DEFAULT_SETUP_TIMEOUT_SEC
        found["credentials"] = missing_credentials(name, model, dict(kwargs or {}))
    return found


def build(request: dict[str, Any]) -> tuple[Any, Any, Path]:
    """Harbor's agent of the request and its environment over the suite's container. The
    agent's logs directory is its trial's `agent/` (TrialPaths), as in a Harbor trial, where it
    is also what the container's /logs/agent holds (a bind mount there, copied back here)."""
    from harbor.models.task.config import EnvironmentConfig
    from harbor.models.trial.paths import TrialPaths

    name = request["agent"]
    logs_dir = Path(request["logs_dir"])
    trial_paths = TrialPaths(trial_dir=logs_dir / "trial")
    trial_paths.agent_dir.mkdir(parents=True, exist_ok=True)
    environment = make_environment_class()(
        request["container"], request["workdir"], environment_dir=logs_dir, environment_name=name,
        session_id=request["session_id"], trial_paths=trial_paths,
        task_env_config=EnvironmentConfig(workdir=request["workdir"]),
    )
    return agent_class(name)(logs_dir=trial_paths.agent_dir, **request["kwargs"]), environment, trial_paths.agent_dir


def trial_dirs() -> list[str]:
    """The directories Harbor's docker environment gives every trial's container: its bind
    mounts' targets (harbor/environments/base.py:249-262: /logs/agent, /logs/verifier,
    /logs/artifacts), made once the container is up with `mkdir -p` and `chmod 777`
    (harbor/environments/docker/docker.py:1095, base.py:716-738)."""
    from harbor.models.trial.paths import EnvironmentPaths

    return [str(EnvironmentPaths.agent_dir), str(EnvironmentPaths.verifier_dir), str(EnvironmentPaths.artifacts_dir)]


def failure(exc: BaseException) -> dict[str, Any]:
    return {"error": f"{type(exc).__name__}: {exc}", "kind": "agent", "error_type": type(exc).__name__,
            "traceback": traceback.format_exc()[-4000:]}


async def install(request: dict[str, Any]) -> dict[str, Any]:
    """The agent's install step, in the suite's set-up container (see the module's doc)."""
    from harbor.agents.terminus_2.tmux_session import TmuxSession
    from harbor.models.trial.paths import EnvironmentPaths

    agent, environment, _ = build(request)
    needed = needs_install(type(agent))
    result: dict[str, Any] = {"install": needed}
    try:
        if needed == INSTALLED:
            await agent.setup(environment)  # Harbor's own: its install(), then its version
            result["version"] = agent.version()
        elif needed == TERMINAL:
            records = agent.options.record_terminal_session
            session = TmuxSession(session_name=agent.name(), environment=environment,
                                  logging_path=EnvironmentPaths.agent_dir / "terminus_2.pane",
                                  local_asciinema_recording_path=None,
                                  remote_asciinema_recording_path=(EnvironmentPaths.agent_dir / "recording.cast"
                                                                   if records else None))
            await session._attempt_tmux_installation()  # what its start() does first
            found = await environment.exec("tmux -V", user="root")
            if found.return_code != 0:
                raise RuntimeError(f"tmux could not be installed: {(found.stderr or found.stdout).strip()[-300:]}")
    except Exception as exc:  # the suite reports it as the set-up layer's failure
        result.update(failure(exc))
    return result


class Phases:
    """The seconds of the agent's setup() and run(), as Harbor's trial times them
    (harbor/trial/trial.py:1880-1894 and 700-784), written to `LOGS/phases.json` as each ends
    so the suite has them even when it had to kill this process."""

    def __init__(self, path: Path) -> None:
        self.path, self.seconds = path, {}

    @contextlib.asynccontextmanager
    async def timed(self, name: str) -> AsyncIterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(time.monotonic() - started, 3)
            self.path.write_text(json.dumps(self.seconds))


async def run(request: dict[str, Any]) -> dict[str, Any]:
    """The agent's run on the measured container, as a Harbor trial runs it: the trial's
    directories made, setup() under its own timeout (the agent class's default, as Harbor's
    trial gives it), run() under the task's agent timeout (`timeout_sec`), both with the
    agent's extra environment (trial.py:748, 1883); what it installs is already there."""
    from harbor.models.agent.context import AgentContext
    from harbor.models.trial.paths import EnvironmentPaths

    agent, environment, agent_dir = build(request)
    needed = needs_install(type(agent))
    context = AgentContext()
    result: dict[str, Any] = {"version": agent.version()}
    phases = Phases(Path(request["logs_dir"]) / "phases.json")
    setup_timeout = float(type(agent).DEFAULT_SETUP_TIMEOUT_SEC)
    try:
        await environment.ensure_dirs(trial_dirs())
        with environment.scoped_exec_env(agent.extra_env):
            # An installed agent's setup() is its install(), done in the set-up layer: here it
            # would install again, without network.
            if needed != INSTALLED:
                async with phases.timed("agent_setup_sec"):
                    try:
                        await asyncio.wait_for(agent.setup(environment), timeout=setup_timeout)
                    except asyncio.TimeoutError:
                        raise RuntimeError(f"Agent setup timed out after {setup_timeout:.0f} seconds") from None
            async with phases.timed("agent_run_sec"):
                try:
                    await asyncio.wait_for(agent.run(request["instruction"], environment, context),
                                           timeout=request.get("timeout_sec"))
                except asyncio.TimeoutError:
                    result["timed_out"] = True  # Harbor's AgentTimeoutError: the suite's time limit
    except Exception as exc:  # the agent's own failure, or its model service's: the suite tells which
        result.update(failure(exc))
    # What the agent left in /logs/agent (Harbor mounts it on the trial's agent/; here it is
    # copied there, as Harbor does for an environment without mounts); an installed agent then
    # reads its context from it.
    try:
        await environment.download_dir(str(EnvironmentPaths.agent_dir), agent_dir)
        if needed == INSTALLED and context.is_empty():
            agent.populate_context_post_run(context)
    except Exception as exc:
        if needed == INSTALLED:
            result.setdefault("error", f"{type(exc).__name__}: reading the agent's logs: {exc}")
    result["context"] = context.model_dump(mode="json", exclude={"rollout_details"})
    result["phases"] = phases.seconds
    return result


def main() -> int:
    if sys.argv[1] == "--check":  # `--check NAME [MODEL [KWARGS]]`: can the bridge run it (at `--agent` parsing, once)
        model = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
        kwargs = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
        print(json.dumps(check(sys.argv[2], model, kwargs)))
        return 0
    if sys.argv[1] == "--warm":  # `--warm NAME`: Harbor imported now, the request when an item starts
        return serve_warm(sys.argv[2])
    handle(Path(sys.argv[1]))
    return 0


def handle(request_path: Path) -> None:
    """Serve one request, write its result and end the process at once: the event loop's and
    the interpreter's shutdown (litellm's clients and threads: seconds) is nobody's time, and
    a Harbor job would not pay it per trial."""
    request = json.loads(request_path.read_text())
    loop = asyncio.new_event_loop()
    result = loop.run_until_complete(install(request) if request.get("mode") == "install" else run(request))
    Path(request["logs_dir"], "result.json").write_text(json.dumps(result, default=str))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def serve_warm(name: str) -> int:
    """Import what running agent `name` needs, then wait for one request on stdin: a line of
    JSON with the request file (`request`) and the suite's environment variables (`env`: the
    model's keys, never written to a file). The import (seconds) is done before the item it
    serves starts, as Harbor imports once per job. EOF (the suite ended) ends it."""
    from harbor.models.agent.context import AgentContext  # noqa: F401 - imported now, used by run()

    make_environment_class()
    needs_install(agent_class(name))
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    order = json.loads(line)
    os.environ.clear()
    os.environ.update(order["env"])
    handle(Path(order["request"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
