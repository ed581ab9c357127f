"""A real image registry on loopback for the pull tests: Debian's `docker-registry` (distribution
2.8), started on a free 127.0.0.1 port with a temporary storage directory. The engine trusts
registries on 127.0.0.0/8 without TLS, so it pushes and pulls there as it would anywhere.

Its access log counts the pulls: each `docker pull` of a tag asks for the tag's manifest once
(Docker 20.10: a HEAD of `manifests/TAG`, then a GET by digest); the push asks too, so a test
counts from after its push.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REGISTRY_BINARY = "/usr/bin/docker-registry"


@dataclass(frozen=True)
class Registry:
    host: str  # 127.0.0.1:PORT
    log: Path

    def reference(self, path: str) -> str:
        return f"{self.host}/{path}"

    def manifest_asks(self, repository: str, tag: str) -> int:
        """How many times the manifest of `repository:tag` was asked for by its tag (one per pull)."""
        pattern = re.compile(rf'"(?:HEAD|GET) /v2/{re.escape(repository)}/manifests/{re.escape(tag)} HTTP/[\d.]+" 200 ')
        return len(pattern.findall(self.log.read_text(encoding="utf-8", errors="replace")))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released): a registry that never answers."""
    return free_port()


@contextmanager
def running_registry() -> Iterator[Registry]:
    """The registry, serving until the block ends; its storage is removed with it."""
    if not os.access(REGISTRY_BINARY, os.X_OK):
        raise RuntimeError(f"{REGISTRY_BINARY} is missing: `apt-get install docker-registry` (scripts/setup-tests)")
    work = Path(tempfile.mkdtemp(prefix="swe-residual-registry-"))
    port = free_port()
    config = work / "config.yml"
    config.write_text(
        "version: 0.1\n"
        "log:\n  level: info\n  accesslog:\n    disabled: false\n"
        f"storage:\n  filesystem:\n    rootdirectory: {work / 'storage'}\n  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n", encoding="utf-8")
    log = work / "registry.log"
    with log.open("wb") as output:
        process = subprocess.Popen([REGISTRY_BINARY, "serve", str(config)], stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the registry did not start: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        yield Registry(f"127.0.0.1:{port}", log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)
