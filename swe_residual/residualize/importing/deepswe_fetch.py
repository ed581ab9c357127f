"""DeepSWE's trial release: its index selects trials, its artifact URLs fetch them into a cache.

The release (v1.1: 29,357 mini-swe-agent trials) is two JSON documents and a file tree:

- `release.json`: `release_id`, `artifact_base_url` and `artifact_patterns`, one key template
  per kind of file (`trajectory`, `model_patch`, `agent_log`, `verifier_output`, and
  `verifier_file` with `{file}`), each `.../{trial_name}/<path in the trial>`;
- `trials.json`: the index, a list of rows (or `{"rows": [...]}`), one per trial:
  `trial_name`, `task_name`, `model`, `config`, `harness`, `reasoning_effort`, `reward`,
  `outcome`, `n_agent_steps`, `cost_usd`, `started_at`, `finished_at`, `has_trajectory`,
  `verifier_files` (the verifier directory's files, `reports/...` included) and more;
- the files at `artifact_base_url/<key>`.

A fetched trial lands in `CACHE/<trial_name>/` at the paths the templates give after
`{trial_name}/` (`agent/trajectory.json`, `artifacts/model.patch`, `verifier/reward.json`...),
which is the release's trial layout that `import deepswe-trials` reads, with its index row
beside them (`index-row.json`). Files already in the cache are not fetched again; a file the
server does not have (HTTP 403 or 404: the release lacks it) is listed as missing, not fatal.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swe_residual.dataset.errors import ConfigError

INDEX_ROW = "index-row.json"
RELEASE = "release.json"
TIMEOUT_SEC = 120
_USER_AGENT = "swe-residual (DeepSWE release import)"
SIMPLE_KINDS = ("trajectory", "model_patch", "agent_log", "verifier_output")


def is_url(location: str) -> bool:
    return urllib.parse.urlsplit(location).scheme in ("http", "https")


def read_location(location: str) -> bytes:
    """The bytes at a URL (http, https) or a local path; a ConfigError naming it otherwise."""
    if is_url(location):
        request = urllib.request.Request(location, headers={"User-Agent": _USER_AGENT})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SEC) as response:
                return response.read()
        except (urllib.error.URLError, OSError) as exc:
            raise ConfigError(f"{location}: cannot be fetched ({exc})") from None
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{location}: cannot be read ({exc.strerror or exc})") from None


def sibling(location: str, name: str) -> str:
    """The file `name` beside `location` (a URL or a path): where release.json sits by trials.json."""
    if is_url(location):
        return urllib.parse.urljoin(location, name)
    return str(Path(location).with_name(name))


def load_index(location: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(read_location(location))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{location}: not a JSON index ({exc.msg})") from None
    rows = data.get("rows") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise ConfigError(f"{location}: an index is a list of trial rows (or {{\"rows\": [...]}})")
    bad = [n for n, row in enumerate(rows, start=1)
           if not isinstance(row, dict) or not isinstance(row.get("trial_name"), str)]
    if bad:
        raise ConfigError(f"{location}: row {bad[0]} has no `trial_name`")
    return rows


@dataclass(frozen=True)
class Release:
    release_id: str
    base_url: str
    patterns: dict[str, str]

    def files(self, row: dict[str, Any]) -> list[tuple[str, str]]:
        """(URL, path inside the trial directory) of each file of a trial the release has."""
        name = str(row["trial_name"])
        wanted = [(kind, "") for kind in SIMPLE_KINDS if kind in self.patterns]
        files = row.get("verifier_files")
        if "verifier_file" in self.patterns and isinstance(files, list):
            wanted += [("verifier_file", str(f)) for f in files if isinstance(f, str) and _safe(f)]
        found: dict[str, str] = {}
        for kind, file in wanted:
            key = self.patterns[kind].replace("{file}", file)
            inside = key.split("{trial_name}/", 1)[-1]
            url = f"{self.base_url.rstrip('/')}/{key.replace('{trial_name}', urllib.parse.quote(name))}"
            found.setdefault(inside, url)  # verifier/test-stdout.txt is both a kind and a listed file
        return [(url, inside) for inside, url in found.items()]


def _safe(relative: str) -> bool:
    parts = Path(relative).parts
    return bool(parts) and not Path(relative).is_absolute() and ".." not in parts


def load_release(location: str) -> Release:
    try:
        data = json.loads(read_location(location))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{location}: not JSON ({exc.msg})") from None
    patterns = data.get("artifact_patterns") if isinstance(data, dict) else None
    base = data.get("artifact_base_url") if isinstance(data, dict) else None
    if not isinstance(patterns, dict) or not isinstance(base, str) or not base:
        raise ConfigError(f"{location}: a release.json names `artifact_base_url` and `artifact_patterns`")
    bad = [kind for kind, key in patterns.items() if not isinstance(key, str) or "{trial_name}/" not in key]
    if bad:
        raise ConfigError(f"{location}: artifact_patterns.{bad[0]} has no `{{trial_name}}/` in its key")
    return Release(str(data.get("release_id") or "unknown"), base, {k: str(v) for k, v in patterns.items()})


@dataclass(frozen=True)
class Selection:
    """Which index rows to import: each list, when given, must hold the row's value."""

    models: Sequence[str] = ()
    configs: Sequence[str] = ()
    tasks: Sequence[str] = ()
    outcomes: Sequence[str] = ()
    limit: int | None = None  # at most this many trials per task and predecessor

    def keeps(self, row: dict[str, Any]) -> bool:
        return all(not wanted or str(row.get(key)) in wanted for key, wanted in (
            ("model", self.models), ("config", self.configs), ("task_name", self.tasks),
            ("outcome", self.outcomes)))

    def as_args(self) -> list[str]:
        args: list[str] = []
        for flag, values in (("--model", self.models), ("--config", self.configs), ("--task", self.tasks),
                             ("--outcome", self.outcomes)):
            for value in values:
                args += [flag, value]
        if self.limit is not None:
            args += ["--limit", str(self.limit)]
        return args


def select(rows: Iterable[dict[str, Any]], selection: Selection, identity: Callable[[dict[str, Any]], str]
           ) -> list[dict[str, Any]]:
    """The rows the selection keeps, in trial-name order; with a limit, the first N of each
    (task, predecessor) by trial name (the same rows whatever order the index lists them in)."""
    kept = sorted((row for row in rows if selection.keeps(row)), key=lambda row: str(row["trial_name"]))
    if selection.limit is None:
        return kept
    taken: dict[tuple[str, str], int] = {}
    limited = []
    for row in kept:
        key = (str(row.get("task_name")), identity(row))
        if taken.get(key, 0) < selection.limit:
            taken[key] = taken.get(key, 0) + 1
            limited.append(row)
    return limited


@dataclass
class Fetched:
    directory: Path
    row: dict[str, Any]
    fetched: int = 0
    cached: int = 0
    missing: list[str] = field(default_factory=list)
    error: str | None = None  # the trial could not be fetched (connection failure): not imported


def _get(url: str) -> bytes | None:
    """A file's bytes; None when the server does not have it (403/404)."""
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SEC) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        if exc.code in (403, 404):  # S3 behind CloudFront answers 403 for a key it does not have
            return None
        raise


def fetch_trial(release: Release, row: dict[str, Any], cache: Path) -> Fetched:
    name = str(row["trial_name"])
    if not _safe(name) or "/" in name:
        return Fetched(cache, row, error=f"trial name {name!r} is not a directory name")
    directory = cache / name
    done = Fetched(directory, row)
    for url, inside in release.files(row):
        target = directory / inside
        if target.is_file():
            done.cached += 1
            continue
        try:
            body = _get(url)
        except (urllib.error.URLError, OSError) as exc:
            done.error = f"{url}: {exc}"
            return done
        if body is None:
            done.missing.append(inside)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".part")
        partial.write_bytes(body)
        os.replace(partial, target)  # a file in the cache is always whole
        done.fetched += 1
    directory.mkdir(parents=True, exist_ok=True)
    (directory / INDEX_ROW).write_text(json.dumps(row, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    return done
