"""The replayed pane against the recorded one (`panes/post-agent.txt`): last lines, first divergence."""

from __future__ import annotations

import pytest

from swe_residual.states.pane_fidelity import Divergence, describe, first_divergence

pytestmark = pytest.mark.unit

# The end of a real Terminus pane (recovery-bench, nginx-request-logging), as tmux saved it.
RECORDED = "root@56f036e0b9ee:/app# nginx -t\nnginx: configuration file /etc/nginx/nginx.conf test is successful\n" \
           "root@56f036e0b9ee:/app# > \n\n\n"


def test_the_same_end_on_another_machine_agrees() -> None:
    replayed = RECORDED.replace("56f036e0b9ee", "0a1b2c3d4e5f").replace("\n\n\n", "\n")
    assert first_divergence(RECORDED, replayed) is None
    assert describe(None) == "the replayed pane ends as the recorded one did"


def test_the_first_divergence_is_named() -> None:
    # The replay's keys went into `apt install`: the shell ran nginx in the foreground instead
    # of sitting at the continuation prompt.
    replayed = RECORDED.replace("root@56f036e0b9ee:/app# > ", "nginx: [emerg] bind() to 0.0.0.0:80 failed")
    divergence = first_divergence(RECORDED, replayed)
    assert divergence == Divergence(3, "root@HOST:/app# >", "nginx: [emerg] bind() to 0.0.0.0:80 failed")
    assert "at line 3" in describe(divergence)


def test_a_shorter_replay_diverges_where_it_ends() -> None:
    assert first_divergence("a\nb\n", "a\n") == Divergence(2, "b", None)
    # Only the last lines are compared: an earlier difference scrolled away is not one.
    assert first_divergence("x\n" + "same\n" * 10, "y\n" + "same\n" * 10) is None
