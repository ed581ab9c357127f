"""Stage IV's comparison of two replays of a machine state (residualize/fidelity.py): the paths
changed, with their kind and mode, and the processes left must agree; a content difference is
listed, not a divergence; volatile places are set aside."""

from __future__ import annotations

import pytest

from types import SimpleNamespace
from typing import Any

from swe_residual.dataset.errors import InfraError
from swe_residual.residualize.fidelity import Fingerprint, compare, fingerprint, volatile

pytestmark = pytest.mark.unit

FILES = {"/app/ssl/server.key": ("file", "600", "aaaa"), "/app/ssl": ("dir", "755", "-"),
         "/etc/nginx/sites-enabled/default": ("deleted", "-", "-")}
PROCESSES = ("bash --login", "python3 -m http.server 8000", "tmux new-session -x 160 -y 40 -d -s swe-residual bash --login")


def test_two_equal_replays_agree() -> None:
    agreement = compare(Fingerprint(dict(FILES), PROCESSES), Fingerprint(dict(FILES), PROCESSES))
    assert agreement.agree and agreement.content_differs == []


def test_a_key_generated_again_is_listed_not_a_divergence() -> None:
    other = {**FILES, "/app/ssl/server.key": ("file", "600", "bbbb")}
    agreement = compare(Fingerprint(dict(FILES), PROCESSES), Fingerprint(other, PROCESSES))
    assert agreement.agree and agreement.content_differs == ["/app/ssl/server.key"]


def test_a_path_only_one_replay_changed_is_the_first_divergence() -> None:
    other = {**FILES, "/app/quoted.txt": ("file", "644", "cccc")}
    agreement = compare(Fingerprint(dict(FILES), PROCESSES), Fingerprint(other, PROCESSES))
    assert agreement.divergence == "/app/quoted.txt: changed only by the second replay (file)"


def test_another_mode_diverges() -> None:
    other = {**FILES, "/app/ssl/server.key": ("file", "644", "aaaa")}
    agreement = compare(Fingerprint(dict(FILES), PROCESSES), Fingerprint(other, PROCESSES))
    assert not agreement.agree and "mode 600 in the first replay" in str(agreement.divergence)


def test_a_server_left_running_by_one_replay_only_diverges() -> None:
    # The keys went into `apt install` in one replay: nginx never started in the foreground.
    agreement = compare(Fingerprint(dict(FILES), PROCESSES), Fingerprint(dict(FILES), PROCESSES[:1] + PROCESSES[2:]))
    assert agreement.divergence is not None and "python3 -m http.server 8000" in agreement.divergence


def test_volatile_places_are_set_aside() -> None:
    assert volatile("/tmp/tmux-0/default") and volatile("/var/log/apt/history.log") and volatile("/proc")
    assert volatile("/app/__pycache__/x.cpython-311.pyc") and volatile("/usr/lib/python3/x.pyc")
    # A log named by the time it was written (pipx) is another path in every replay.
    assert volatile("/root/.local/pipx/logs/cmd_2026-12-02_01.31.54.log")
    assert not volatile("/app/ssl/server.key") and not volatile("/tmpfile") and not volatile("/etc/nginx")


class _SlowDescribe:
    """A fake container whose describe step was killed at its deadline after one path. Faked:
    the real cause (some 12,000 files an `apt install r-base` left, described one process at a
    time on a loaded host) takes over ten minutes to reproduce."""

    container_id = "c"

    def __init__(self) -> None:
        diff = [{"Path": "/usr/share/R/doc/COPYING", "Kind": 1}, {"Path": "/usr/share/R/doc/NEWS", "Kind": 1}]
        self.client = SimpleNamespace(api=SimpleNamespace(diff=lambda _: diff))

    def write_file(self, path: str, data: bytes) -> None:
        pass

    def exec(self, command: str, timeout_sec: float) -> Any:
        if "ps -eo" in command:
            return SimpleNamespace(stdout="bash --login\n", exit_code=0)
        return SimpleNamespace(stdout="link 777 0123456789abcdef /usr/share/R/doc/COPYING\n", exit_code=137)


def test_a_fingerprint_cut_off_at_its_deadline_is_an_error_not_a_divergence() -> None:
    with pytest.raises(InfraError, match="describing the 2 changed path.* did not finish .exit 137, 1 described"):
        fingerprint(_SlowDescribe())
