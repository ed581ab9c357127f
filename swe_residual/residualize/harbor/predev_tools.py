"""The tool calls of a Harbor trial of pre.dev's agent (`predev`), as machine-track interactions.

The layout read (predotdev/predev-terminal-bench-2.0: Harbor's installed agent
`predev_agent_auto:PredevAgentAuto`, `agent_info.name = "predev-auto"`), relative to the trial
directory:

| file | what it holds |
|---|---|
| `artifacts/trajectory.json` | the agent's ATIF-v1.4 trajectory (`agent.name = "predev"`, `agent.model_name`), which its CLI writes into the task's directory (`/app/trajectory.json`) and Harbor collects as an artifact: each tool call an agent step with `tool_calls` (`function_name`, `arguments` a JSON string, `tool_call_id`) and, in the same step, `observation.results[]` (`source_call_id`, `content` the tool's text) |
| `artifacts/manifest.json` | whether Harbor found that file (`status` `ok`) |
| `trial.log` | Harbor's log of the agent's set-up: `Running command: ...` lines, each followed by `Command outputs captured`, the last two launching the agent |
| `docker-compose-mounts.json` | the volumes Harbor mounted into the task's container (`services.main.volumes`, `HOST:CONTAINER[:MODE]`): the agent's own runtime, `/home/user/predev-agent`, and its keys |

How the agent ran: inside the task's container, as root, its CLI started in the container's
working directory (`TASK_DIR=$(readlink -f /proc/1/cwd)`: the image's WORKDIR); its `bash` tool
runs `bash -c COMMAND` there (its errors read `bash: line 1: ...`), a fresh shell per call, and
answers `{"stdout", "stderr", "exitCode", "command", "status"}` (a long answer is cut mid-JSON, its
exit status lost). A command still running after 15 s is moved to the background ("Command sent to
background", `get_task_output` to wait for it), as is one run with `run_in_background`.
`sequential_recurse` hands the work to a fresh sub-agent whose turns follow it in the trajectory
(its answer, written when that sub-agent returns, names its turns and the tools it called);
`return_result` ends a frame, or, answered "Chain complete.", the run.

| recorded | replayed as |
|---|---|
| the set-up's `apt-get install` of `unzip curl git gcc g++ make python3`, `git config --global`, `pip install numpy scipy ...`, `echo HASH > /tmp/predev-hash` | the same commands, `bash -c`, in that order, first, each within `SETUP_TIMEOUT_SEC`; the apt step without its proxy clause (the recording host's apt cache at the Docker bridge address, unreachable from another host) |
| a set-up command's time limit, `timeout N` (`timeout 60 pip install ...`, and so its `pip3` fallback) | the command without it: it runs to its end, however fast the replaying machine (counted, with what the recording shows of the limit: below) |
| the set-up's install of bun and of the agent's own packages (`/home/user/predev-agent`, a mount) | nothing: the agent's runtime, not the task's (counted) |
| `bash` answered with its exit status | one command, `bash -c`, at the task's workdir, within its `timeout_ms` (at least `MIN_ENDED_TIMEOUT_SEC`: it ended when recorded), the exit status and output the agent saw kept as `observed` (only the exit status when both streams printed: their interleaving is lost); the harness's mounts the output names listed as `observed.harness_mounts` (a `find /` that listed the agent's own `node_modules`: the replay has no such mount, and Stage IV sets those lines aside) |
| `bash` whose answer was cut (the trajectory keeps a prefix of long answers) | the same command, `observed` only its exit status when the cut came after it, else none (counted) |
| `bash` the tool declined ("Do not use bash heredocs", "Duplicate command detected — NOT re-run", `Error: ...`) | nothing: it never ran (counted) |
| `write_file` | `{"write": file_path, "content": ...}` |
| `edit_file` (`mode` `string`) | `{"edit": file_path, "replace": [{"old", "new"}]}` |
| `write_file`/`edit_file` answered with an error | nothing: the file was not changed (counted) |
| `read_code`, `glob_files`, `grep_files`, `search_project`, `search_conversation_history`, `exa_*`, `llm_call`, `TodoWrite`, `manage_memory`, `return_result`, `browser_*` (answered "not available in CLI mode") | nothing: they change nothing on the machine (counted) |
| `execute_program` whose nested calls (its answer's `_programMetadata.toolCalls`) are all of the tools above | nothing (counted) |
| `sequential_recurse` | nothing itself: its sub-agent's calls are the steps after it (counted) |
| the trajectory the CLI left in the task's directory (manifest `ok`) | last, `{"write": "/app/trajectory.json", "content": ...}` (the collected file) |

Refused, with the step that made it: `execute_program` that ran `bash`, `write_file`, `edit_file`
or another tool (its nested calls' arguments are not recorded, only their names), a `bash` moved to
the background (never seen to end: the replay would run it to its end), a call with no answer (the
run ended while it ran), an `edit_file` by lines or replacing every occurrence, a
`sequential_recurse` whose answer names tools no later step calls (its sub-agent's calls are not
all in the trajectory), `parallel_analyze` (its branches' calls are not recorded), any other tool,
and a set-up not recorded as above.

The set-up's time limits. Harbor's trial.log says of each set-up command only whether it ended
well (`Command outputs captured`) or not (`Command failed`, as 8 of the repository's 178 trials
record after the agent's launch), not when: `timeout 60 pip install ...` measured the recording
host's speed, and what it left when it struck depends on how far pip got, which no replay on
another machine reproduces (one replay at load 5-8 stopped before narwhals, another did not).
The replay lifts the limit and runs the command to its end, assuming the limit did not strike in
the recording. What the recording shows of that is counted: when the whole set-up took less than
N s (result.json's `agent_setup`), the limit was never reached; otherwise trial.log cannot tell
(the pip line ends in `|| true`, so it ends well either way). A set-up command with a limit that
ended in `Command failed` is refused: the limit may have stopped it, and the state is then what a
stopped command left.

Declared done (harbor/declared.py, `return_result_declaration`): the agent's last `return_result`
declares the work done (`done` not false, no `needsContinuation`), closes the run rather than a
sub-agent's frame, and no call acted on the machine after it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from swe_residual.dataset.harbor_layout import TRAJECTORIES, read_artifact_manifest, read_object
from swe_residual.residualize.harbor.declared import return_result_declaration
from swe_residual.residualize.harbor.tool_calls import MAX_TIMEOUT_SEC, MIN_ENDED_TIMEOUT_SEC, ToolCalls

AGENT = "predev"
TRAJECTORY = TRAJECTORIES[1]  # collected from the task's directory: artifacts/trajectory.json
TRIAL_LOG = "trial.log"
SHELL = "bash"
SETUP_TIMEOUT_SEC = MAX_TIMEOUT_SEC
NO_EFFECT = frozenset({"read_code", "glob_files", "grep_files", "search_project", "search_conversation_history",
                       "llm_call", "TodoWrite", "manage_memory", "return_result", "exa_search_urls",
                       "exa_get_code_context", "exa_get_content"})
ACTS = frozenset({"bash", "write_file", "edit_file", "execute_program"})  # calls that change the machine
_RUNNING = "Running command: "
_CAPTURED = "Command outputs captured"
_LAUNCH = "TASK_DIR="
_AGENT_RUNTIME = ("bun.sh/install", "/home/user/predev-agent")
_FAILED = "Command failed"
# A set-up command's time limit: `timeout [OPTION]... DURATION` where a command starts (the line's
# start, or after ; & | or an opening parenthesis). Group 1 is what precedes it, kept.
_TIME_LIMIT = re.compile(r"(^|[;&|(]\s*)timeout\s+(?:(?:--foreground|--preserve-status|-v|--verbose)\s+"
                         r"|(?:-[sk]\s*|--(?:signal|kill-after)=)\S+\s+)*(\d+(?:\.\d+)?)([smhd]?)\s+")
_UNIT_SEC = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_APT_PROXY = re.compile(r"echo 'Acquire::http::Proxy \"[^\"]*\";' > /etc/apt/apt\.conf\.d/01proxy 2>/dev/null "
                        r"\|\| true; ")
_DECLINED = ("⚠️ Do not use bash heredocs", "⚠️ **Duplicate command detected — NOT re-run", "Error: ")
_BACKGROUND = ("⏳ **Command sent to background**", "✅ Task started in background")
_EXIT = re.compile(r'"exitCode":(-?\d+),"command":')
_SUB_AGENT_TOOLS = re.compile(r"^\*\*Tools Called:\*\* (.*)$", re.MULTILINE)


class _Refused(Exception):
    """What makes the trial's calls unreplayable, with the step that made it."""


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    value = call.get("arguments")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {}
    return value if isinstance(value, dict) else {}


def _calls(steps: list[dict[str, Any]]) -> list[tuple[Any, str, dict[str, Any], str | None]]:
    """(step, tool, arguments, answer or None) for every call, in the trajectory's order."""
    found = []
    for step in steps:
        results = (step.get("observation") or {}).get("results") if isinstance(step.get("observation"), dict) else None
        answers = {r.get("source_call_id"): r.get("content") for r in results or [] if isinstance(r, dict)}
        for call in step.get("tool_calls") or []:
            if isinstance(call, dict):
                answer = answers.get(call.get("tool_call_id"))
                found.append((step.get("step_id"), str(call.get("function_name") or ""), _arguments(call),
                              answer if isinstance(answer, str) else None))
    return found


def time_limits(command: str) -> tuple[str, list[float]]:
    """`command` without its `timeout N` wrappers, and their limits in seconds."""
    limits = [float(m.group(2)) * _UNIT_SEC[m.group(3)] for m in _TIME_LIMIT.finditer(command)]
    return _TIME_LIMIT.sub(r"\1", command), limits


def setup_seconds(trial_dir: Path) -> float | None:
    """How long Harbor's agent set-up took in the recording (result.json's agent_setup), if it says."""
    data, _ = read_object(trial_dir / "result.json")
    period = (data or {}).get("agent_setup")
    try:
        start, end = (datetime.fromisoformat(str(period[key]).replace("Z", "+00:00"))  # type: ignore[index]
                      for key in ("started_at", "finished_at"))
    except (TypeError, KeyError, ValueError):
        return None
    return (end - start).total_seconds()


def _limit_shown(limit: float, took: float | None) -> str:
    """What the recording shows of a lifted set-up time limit."""
    if took is not None and took < limit:
        return f"never reached: the whole set-up took {took:.0f} s"
    return (f"trial.log cannot show it unreached: the whole set-up took {took:.0f} s" if took is not None
            else "trial.log cannot show it unreached: result.json gives no set-up time")


def setup_lines(trial_dir: Path) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The set-up's commands that changed the task's machine, from trial.log, without their time limits."""
    try:
        log = (trial_dir / TRIAL_LOG).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise _Refused(f"{TRIAL_LOG} cannot be read ({exc.__class__.__name__}): the agent's set-up is unknown") from exc
    lines: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    took = setup_seconds(trial_dir)
    for number, text in enumerate(log):
        if not text.startswith(_RUNNING):
            continue
        command = text[len(_RUNNING):]
        if command.startswith(_LAUNCH):
            return lines, counts
        unlimited, limits = time_limits(command)
        if number + 1 < len(log) and log[number + 1] == _FAILED and limits:
            raise _Refused(f"{TRIAL_LOG} line {number + 1}: a set-up command with a time limit (timeout "
                           f"{max(limits):g} s) ended in '{_FAILED}': its limit may have stopped it, and what a "
                           "stopped command leaves depends on the recording machine's speed")
        if number + 1 >= len(log) or log[number + 1] != _CAPTURED:
            raise _Refused(f"{TRIAL_LOG} line {number + 1}: a set-up command not followed by '{_CAPTURED}'")
        if any(mark in command for mark in _AGENT_RUNTIME):
            counts["skipped: set-up of the agent's own runtime (bun, its packages)"] += 1
            continue
        lines.append({"command": _APT_PROXY.sub("", unlimited), "shell": SHELL, "timeout_sec": SETUP_TIMEOUT_SEC})
        counts["replayed: set-up command"] += 1
        for limit in limits:
            counts[f"replayed: set-up time limit lifted (timeout {limit:g} s; {_limit_shown(limit, took)})"] += 1
    raise _Refused(f"{TRIAL_LOG} records no launch of the agent (`{_LAUNCH}...`): its set-up is unknown")


COMPOSE_MOUNTS = "docker-compose-mounts.json"


def harness_mounts(trial_dir: Path) -> list[str]:
    """Where the recording harness mounted its own files into the task's container (the
    container side of `docker-compose-mounts.json`'s volumes): none of them is the task's."""
    data, _ = read_object(trial_dir / COMPOSE_MOUNTS)
    services = (data or {}).get("services")
    found: list[str] = []
    for service in services.values() if isinstance(services, dict) else ():
        volumes = service.get("volumes") if isinstance(service, dict) else None
        for volume in volumes if isinstance(volumes, list) else ():
            parts = volume.split(":") if isinstance(volume, str) else []
            target = parts[1] if len(parts) >= 2 else ""
            if target.startswith("/") and target.rstrip("/") and target.rstrip("/") not in found:
                found.append(target.rstrip("/"))
    return found


def named_mounts(output: str, mounts: list[str]) -> list[str]:
    """The mounts a path in `output` lies under (the mount itself or below it)."""
    return [mount for mount in mounts if re.search(rf"(?<![\w./-]){re.escape(mount)}(?![\w.-])", output)]


def _observed(answer: str) -> dict[str, Any] | None:
    """The exit status and output of a `bash` answer, or None when it was cut before its exit status."""
    try:
        data = json.loads(answer)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or isinstance(data.get("exitCode"), bool) or not isinstance(data.get("exitCode"), int):
        return None
    stdout, stderr = str(data.get("stdout") or ""), str(data.get("stderr") or "")
    if stdout and stderr:
        return {"exit_code": data["exitCode"]}
    return {"exit_code": data["exitCode"], "output": stdout or stderr}


class _Reader:
    def __init__(self, lines: list[dict[str, Any]], counts: Counter[str], mounts: list[str] | None = None) -> None:
        self.lines, self.counts = lines, counts
        self.mounts = mounts or []

    def call(self, position: int, calls: list[tuple[Any, str, dict[str, Any], str | None]]) -> None:
        step, name, arguments, answer = calls[position]
        if name in NO_EFFECT or name.startswith("browser_"):
            self.counts[f"skipped: {name} (changes nothing on the machine)"] += 1
        elif answer is None:
            raise _Refused(f"step {step}: {name} has no answer: the run ended while it ran, "
                           "and what it did is unknown")
        elif name == "bash":
            self.bash(step, arguments, answer)
        elif name == "write_file":
            self.write(step, arguments, answer)
        elif name == "edit_file":
            self.edit(step, arguments, answer)
        elif name == "execute_program":
            self.program(step, answer)
        elif name == "sequential_recurse":
            self.recurse(step, answer, {later[1] for later in calls[position + 1:]})
        else:
            raise _Refused(f"step {step}: {name or '(unnamed)'}: a tool whose effect on the machine is not recorded")

    def bash(self, step: Any, arguments: dict[str, Any], answer: str) -> None:
        command = arguments.get("command")
        if answer.startswith(_DECLINED):
            self.counts["skipped: bash the tool declined (never ran)"] += 1
            return
        if answer.startswith(_BACKGROUND) or arguments.get("run_in_background"):
            shown = command[:80] if isinstance(command, str) else command
            raise _Refused(f"step {step}: bash {shown!r} went on in the background and was never seen to end: "
                           "the replay would run it to its end")
        if not isinstance(command, str) or not command.strip():
            raise _Refused(f"step {step}: bash with no command in its arguments")
        given = arguments.get("timeout_ms")
        timeout = MIN_ENDED_TIMEOUT_SEC
        if not isinstance(given, bool) and isinstance(given, (int, float)) and given > 0:
            timeout = min(max(given / 1000, MIN_ENDED_TIMEOUT_SEC), MAX_TIMEOUT_SEC)
        line: dict[str, Any] = {"command": command, "shell": SHELL, "timeout_sec": timeout}
        observed = _observed(answer)
        code = _EXIT.search(answer)
        if observed is not None:
            named = named_mounts(observed.get("output", ""), self.mounts)
            if named:
                observed["harness_mounts"] = named
            line["observed"] = observed
            self.counts["replayed: bash"] += 1
        elif not answer.startswith("{"):
            raise _Refused(f"step {step}: bash answered without its exit status ({answer[:80]!r})")
        elif code is not None:  # cut after its exit status: the output may be cut too
            line["observed"] = {"exit_code": int(code.group(1))}
            self.counts["replayed: bash (its answer cut: the exit status compared)"] += 1
        else:
            self.counts["replayed: bash (its answer cut before its exit status: not compared)"] += 1
        self.lines.append(line)

    def write(self, step: Any, arguments: dict[str, Any], answer: str) -> None:
        path, content = arguments.get("file_path"), arguments.get("content")
        if answer.startswith("Error"):
            self.counts["skipped: write_file answered with an error (the file was not changed)"] += 1
            return
        if not isinstance(path, str) or not path or not isinstance(content, str):
            raise _Refused(f"step {step}: write_file with no file_path or content in its arguments")
        self.lines.append({"write": path, "content": content})
        self.counts["replayed: write_file"] += 1

    def edit(self, step: Any, arguments: dict[str, Any], answer: str) -> None:
        if answer.startswith("Error"):
            self.counts["skipped: edit_file answered with an error (the file was not changed)"] += 1
            return
        path, old, new = arguments.get("file_path"), arguments.get("old_string"), arguments.get("new_string")
        if arguments.get("mode", "string") != "string" or arguments.get("replace_all"):
            raise _Refused(f"step {step}: edit_file by lines or of every occurrence: an interaction's edit "
                           "replaces one string")
        if not isinstance(path, str) or not path or not isinstance(old, str) or not old or not isinstance(new, str):
            raise _Refused(f"step {step}: edit_file with no file_path, or without its old and new text")
        self.lines.append({"edit": path, "replace": [{"old": old, "new": new}]})
        self.counts["replayed: edit_file"] += 1

    def program(self, step: Any, answer: str) -> None:
        try:
            data = json.loads(answer)
        except json.JSONDecodeError:
            data = None
        metadata = data.get("_programMetadata") if isinstance(data, dict) else None
        nested = metadata.get("toolCalls") if isinstance(metadata, dict) else None
        if not isinstance(nested, list):
            raise _Refused(f"step {step}: execute_program (JavaScript calling the agent's tools): its answer was cut "
                           "before the list of its nested calls, whose arguments are never recorded")
        names = [str(item.get("name")) for item in nested if isinstance(item, dict)]
        acting = sorted({name for name in names if name not in NO_EFFECT})
        if acting or len(names) != len(nested):
            raise _Refused(f"step {step}: execute_program ran {', '.join(acting) or 'an unnamed tool'} from "
                           "JavaScript: only the nested calls' names are recorded, not their arguments")
        self.counts["skipped: execute_program calling only tools that change nothing"] += 1

    def recurse(self, step: Any, answer: str, later: set[str]) -> None:
        if answer.startswith("❌"):
            self.counts["skipped: sequential_recurse answered with an error (never ran)"] += 1
            return
        named = _SUB_AGENT_TOOLS.search(answer)
        tools = {part.strip() for part in named.group(1).split(",") if part.strip()} if named else set()
        missing = sorted(tools - later)
        if missing:
            raise _Refused(f"step {step}: sequential_recurse's sub-agent called {', '.join(missing)}, "
                           "which no later step of the trajectory calls: its calls are not recorded")
        self.counts["skipped: sequential_recurse (its sub-agent's calls follow it in the trajectory)"] += 1


def _left_trajectory(trial_dir: Path) -> str | None:
    """Where the CLI left its trajectory on the machine, when Harbor collected it from there."""
    for entry in read_artifact_manifest(trial_dir / "artifacts"):
        if entry.destination == TRAJECTORY and entry.status == "ok" and entry.source.startswith("/"):
            return entry.source
    return None


def read_predev_tool_calls(trial_dir: Path) -> ToolCalls | None:
    """The trial's calls as interactions, or None when it holds no predev trajectory under artifacts/."""
    data, _ = read_object(trial_dir / TRAJECTORY)
    agent = (data or {}).get("agent")
    if not isinstance(agent, dict) or agent.get("name") != AGENT:
        return None
    steps = [step for step in data.get("steps") or [] if isinstance(step, dict)]  # type: ignore[union-attr]
    calls = _calls(steps)
    declaration = return_result_declaration(calls, ACTS)
    refused: str | None = None
    reader = _Reader([], Counter(), harness_mounts(trial_dir))
    try:
        reader.lines, reader.counts = setup_lines(trial_dir)
        for position in range(len(calls)):
            reader.call(position, calls)
    except _Refused as why:
        refused = str(why)
    left = _left_trajectory(trial_dir) if refused is None else None
    if left is not None:
        reader.lines.append({"write": left, "content": (trial_dir / TRAJECTORY).read_text(encoding="utf-8")})
        reader.counts["replayed: the trajectory the agent left in the task's directory"] += 1
    return ToolCalls(reader.lines, TRAJECTORY, declaration.declared, dict(sorted(reader.counts.items())), refused,
                     declaration.how)
