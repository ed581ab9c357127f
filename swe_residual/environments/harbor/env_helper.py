"""The Harbor side of `--backend=harbor:ENV`: run with Harbor's own Python, never imported by the suite.

Harbor needs Python >= 3.12 and the suite runs on 3.11, so the suite starts this file as a
process of Harbor's virtual environment (environments/harbor/process.py), as it does for
`--agent=harbor:NAME` (agents/harbor_helper.py). It hosts Harbor's own environment classes,
unmodified, made by Harbor's `EnvironmentFactory` (the class of each `EnvironmentType`), and
answers requests on a pipe: one JSON object a line on stdin, one answer a line on the
descriptor the suite gave (stdout at start; Harbor's own logging goes to stderr). Requests run
concurrently (each an asyncio task), answered with their `id`:

  check     {env}                         Harbor's version, whether ENV exists, its preflight
                                          (the credentials it needs), its resource capabilities
  start     {handle, env, environment_dir, environment_name, session_id, trial_dir,
             task_env, network, force_build, kwargs, extra_compose}
                                          the environment made and started (Harbor's start())
  exec      {handle, command, cwd, env, timeout_sec, user}
  upload_file / upload_dir / download_file / download_dir   {handle, source, target}
  stop      {handle, delete}              Harbor's stop(delete)

Usage: python env_helper.py (requests on stdin until EOF; every environment still running is
then stopped and deleted).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

_ENVIRONMENTS: dict[str, Any] = {}
_KEEP_AS: dict[str, str] = {}  # handle -> the stable tag its built image is kept under (keep_image)
_OUT_LOCK = threading.Lock()
_OUT: Any = None  # the answers' stream (the process's original stdout)


def answer(message: dict[str, Any]) -> None:
    line = json.dumps(message, default=str) + "\n"
    with _OUT_LOCK:
        _OUT.write(line)
        _OUT.flush()


def check(request: dict[str, Any]) -> dict[str, Any]:
    """What Harbor says of environment type ENV before any item runs."""
    import importlib.metadata

    from harbor.environments.factory import _load_environment_class
    from harbor.models.environment_type import EnvironmentType

    name = request["env"]
    found: dict[str, Any] = {"harbor": importlib.metadata.version("harbor"), "error": None, "preflight": None}
    known = sorted(item.value for item in EnvironmentType)
    if name not in known:
        found["error"] = f"Harbor has no environment {name!r} (known: {', '.join(known)})"
        return found
    try:
        cls = _load_environment_class(EnvironmentType(name))
    except (ImportError, ValueError) as exc:
        found["error"] = str(exc)
        return found
    try:
        cls.preflight()
    except SystemExit as exc:  # Harbor's way of saying a credential or a tool is missing
        found["preflight"] = str(exc)
    resources = cls.resource_capabilities()
    found["resources"] = resources.model_dump() if resources is not None else None
    return found


def no_network_route(name: str) -> str:
    """How a no-network task's environment is made: "harbor" (Harbor's environment enforces its
    own no-network policy) or "overlay" (Harbor's docker environment cannot here: it enforces
    no-network with an egress sidecar only after a kernel probe, both images pinned by digest on
    Docker Hub; where the engine cannot get them, the main service is started with Harbor's own
    `docker-compose-no-network.yaml` overlay, `network_mode: none`, as Harbor's other compose
    environments do)."""
    if name != "docker":
        return "harbor"
    from harbor.environments.docker.docker import DockerEnvironment

    return "harbor" if DockerEnvironment._egress_control_kernel_support() else "overlay"


async def start(request: dict[str, Any]) -> dict[str, Any]:
    from harbor.environments.factory import EnvironmentFactory
    from harbor.models.environment_type import EnvironmentType
    from harbor.models.task.config import EnvironmentConfig, NetworkMode, NetworkPolicy
    from harbor.models.trial.paths import TrialPaths

    name = request["env"]
    trial_paths = TrialPaths(trial_dir=Path(request["trial_dir"]))
    trial_paths.mkdir()
    extra = list(request.get("extra_compose") or [])
    route = "public"
    policy = NetworkPolicy(network_mode=NetworkMode.PUBLIC)
    if request.get("network") == "none":
        route = no_network_route(name)
        if route == "harbor":
            policy = NetworkPolicy(network_mode=NetworkMode.NO_NETWORK)
        else:
            from harbor.environments.docker import COMPOSE_NO_NETWORK_PATH

            extra.append(str(COMPOSE_NO_NETWORK_PATH))
    task_env = EnvironmentConfig(**request["task_env"])
    kwargs = dict(request.get("kwargs") or {})
    if extra:
        kwargs["extra_docker_compose"] = extra
    environment = EnvironmentFactory.create_environment(
        type=EnvironmentType(name), environment_dir=Path(request["environment_dir"]),
        environment_name=request["environment_name"], session_id=request["session_id"],
        trial_paths=trial_paths, task_env_config=task_env, network_policy=policy, **kwargs)
    _ENVIRONMENTS[request["handle"]] = environment
    if request.get("keep_image_as"):
        _KEEP_AS[request["handle"]] = request["keep_image_as"]
    started = time.monotonic()
    await environment.start(force_build=bool(request.get("force_build")))
    return {"network_route": route, "start_sec": round(time.monotonic() - started, 3),
            "capabilities": environment.capabilities.model_dump()}


async def run_exec(request: dict[str, Any]) -> dict[str, Any]:
    environment = _ENVIRONMENTS[request["handle"]]
    timeout = request.get("timeout_sec")
    started = time.monotonic()
    try:
        done = await environment.exec(request["command"], cwd=request.get("cwd"), env=request.get("env"),
                                      timeout_sec=int(timeout) if timeout else None, user=request.get("user"))
    except RuntimeError as exc:
        if "timed out" in str(exc):  # Harbor's docker exec: "Command timed out after N seconds"
            return {"return_code": None, "stdout": "", "stderr": str(exc), "timed_out": True,
                    "duration_sec": time.monotonic() - started}
        raise
    return {"return_code": done.return_code, "stdout": done.stdout or "", "stderr": done.stderr or "",
            "timed_out": False, "duration_sec": time.monotonic() - started}


async def transfer(request: dict[str, Any]) -> dict[str, Any]:
    environment = _ENVIRONMENTS[request["handle"]]
    op, source, target = request["op"], request["source"], request["target"]
    if op == "upload_file":
        await environment.upload_file(source, target)
    elif op == "upload_dir":
        await environment.upload_dir(source, target)
    elif op == "download_file":
        await environment.download_file(source, target)
    else:
        await environment.download_dir(source, target)
    return {}


async def stop(request: dict[str, Any]) -> dict[str, Any]:
    # Forgotten only once stopped: a stop cancelled at EOF is done again there.
    environment = _ENVIRONMENTS.get(request["handle"])
    if environment is not None:
        delete = bool(request.get("delete", True))
        await environment.stop(delete=delete)
        _ENVIRONMENTS.pop(request["handle"], None)
        keep = _KEEP_AS.pop(request["handle"], None)
        if keep and not delete:
            await keep_image(request["handle"], keep)
    return {}


async def keep_image(project: str, tag: str) -> None:
    """Docker, stopped without delete: the image Compose built for this project (`<project>-main`)
    kept under the one stable tag of its task's content, its per-project name removed, so the next
    start's build is a cache hit and no per-start name piles up. When the tag is there already (two
    starts of one task built at once, each missing the other's cache), the first kept stays and
    this build's image goes with its name: moving the tag would leave the first one dangling."""
    async def docker(*args: str) -> int:
        process = await asyncio.create_subprocess_exec("docker", *args, stdout=asyncio.subprocess.DEVNULL,
                                                       stderr=asyncio.subprocess.DEVNULL)
        return await process.wait()

    built = f"{project}-main"
    if await docker("image", "inspect", tag) == 0 or await docker("image", "tag", built, tag) == 0:
        await docker("image", "rm", built)


_OPS = {"exec": run_exec, "start": start, "stop": stop, "upload_file": transfer, "upload_dir": transfer,
        "download_file": transfer, "download_dir": transfer}


async def serve(request: dict[str, Any]) -> None:
    reply: dict[str, Any] = {"id": request.get("id")}
    try:
        if request["op"] == "check":
            reply.update(check(request))
        else:
            reply.update(await _OPS[request["op"]](request))
        reply["ok"] = True
    except BaseException as exc:  # every failure is the request's answer, never the helper's end
        reply.update({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:4000], "error_type": type(exc).__name__,
                      "traceback": traceback.format_exc()[-3000:]})
    answer(reply)


async def main_loop() -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def read_stdin() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=read_stdin, daemon=True).start()
    pending: set[asyncio.Task[None]] = set()
    while True:
        line = await queue.get()
        if line is None:
            break
        if not line.strip():
            continue
        task = asyncio.create_task(serve(json.loads(line)))
        pending.add(task)
        task.add_done_callback(pending.discard)
    # EOF: the suite is gone or done; nothing Harbor started outlives it.
    for task in list(pending):
        task.cancel()
    for handle in list(_ENVIRONMENTS):
        try:
            await stop({"handle": handle})
        except Exception:
            pass


def main() -> int:
    global _OUT
    # Answers go to the original stdout; anything Harbor or a library prints goes to stderr.
    _OUT = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    answer({"id": None, "ok": True, "ready": True})
    asyncio.run(main_loop())
    return 0


if __name__ == "__main__":
    sys.exit(main())
