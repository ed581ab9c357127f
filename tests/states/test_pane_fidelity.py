"""The replayed pane against the recorded one (`panes/post-agent.txt`): last lines, first divergence."""

from __future__ import annotations

import pytest

from swe_residual.dataset.states.pane_fidelity import Divergence, describe, first_divergence

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


def test_the_tolerance_rule_masks_what_differs_between_moments() -> None:
    # Recorded in July 2025 on one machine; replayed today on another: dates, times, a key
    # generated again (its fingerprint), and the harness's own `; tmux wait -S done`.
    recorded = ("root@56f036e0b9ee:/app# ls -l ssl; tmux wait -S done\n"
                "-rw------- 1 root root 1704 Jul 15 02:14 server.key\n"
                "notAfter=Jul 15 02:14:31 2026 GMT\n"
                "sha256 Fingerprint=AB:CD:EF:01:02:03:04:05:06:07:08:09\n"
                "written 2025-07-15 02:14:31 id 3f9c2e1a7b6d5c4e3f9c2e1a\n")
    replayed = ("root@0a1b2c3d4e5f:/app# ls -l ssl\n"
                "-rw------- 1 root root 1704 Dec  2 01:06 server.key\n"
                "notAfter=Dec  2 01:06:09 2027 GMT\n"
                "sha256 Fingerprint=11:22:33:44:55:66:77:88:99:AA:BB:CC\n"
                "written 2026-12-02 01:06:09 id 0000aaaa1111bbbb2222cccc\n")
    assert first_divergence(recorded, replayed) is None
    # Anything else is compared as written: another size is a divergence.
    assert first_divergence(recorded, replayed.replace("1704", "1700")) == Divergence(
        2, "-rw------- <LINKS> root root 1704 <DATE> server.key", "-rw------- <LINKS> root root 1700 <DATE> server.key")


def test_the_harness_suffix_is_dropped_where_tmux_wrapped_it() -> None:
    # The appended `; tmux wait -S done` took the command past the pane's width: tmux broke the
    # line inside the suffix, or right before its last word.
    recorded = ("root@c81a8e516b61:/app# echo 'Backup database is also not valid.' > /app/status.txt; tmux wait -S\n"
                " done\n"
                "root@c81a8e516b61:/app# echo 'No tools found.' > /app/status.txt; tmux wait -S do\n"
                "ne\n"
                "root@c81a8e516b61:/app#\n")
    replayed = ("root@0a1b2c3d4e5f:/app# echo 'Backup database is also not valid.' > /app/status.txt\n"
                "root@0a1b2c3d4e5f:/app# echo 'No tools found.' > /app/status.txt\n"
                "root@0a1b2c3d4e5f:/app#\n")
    assert first_divergence(recorded, replayed) is None


LS_RECORDED = ("root@0123456789ab:/app# ls -la\n"
               "-rw-r--r-- 1 root root  3771 Jul 15 02:14 exponential_samples.txt\n"
               "-rw-r--r-- 1 root root   812 Jul 15 02:14 ars.R\n"
               "root@0123456789ab:/app#\n")


def test_the_size_of_a_file_the_replays_did_not_reproduce_is_masked_in_ls_lines() -> None:
    # `rexp()` without a seed: each replay writes other samples, of another length.
    replayed = LS_RECORDED.replace(" 3771 ", " 3790 ")
    assert first_divergence(LS_RECORDED, replayed, unstable_files=("/app/exponential_samples.txt",)) is None
    assert first_divergence(LS_RECORDED, replayed) == Divergence(
        2, "-rw-r--r-- <LINKS> root root 3771 <DATE> exponential_samples.txt",
        "-rw-r--r-- <LINKS> root root 3790 <DATE> exponential_samples.txt")


def test_only_the_unstable_files_size_is_masked() -> None:
    replayed = LS_RECORDED.replace("  812 ", "  999 ")
    divergence = first_divergence(LS_RECORDED, replayed, unstable_files=("/app/exponential_samples.txt",))
    assert divergence is not None and divergence.line == 3 and "999" in str(divergence.replayed)


def test_df_sizes_are_the_hosts_disk() -> None:
    # `df /app` in a container reports the engine's file system (password-recovery, Terminus-2
    # with Sonnet 4.6): its sizes, and the header's spacing they set, are the host's.
    recorded = ("root@10b5b377acf1:/app# df /app\n"
                "Filesystem     1K-blocks      Used Available Use% Mounted on\n"
                "overlay        473768240 286912016 186856224  61% /\n")
    replayed = ("root@0a1b2c3d4e5f:/app# df /app\n"
                "Filesystem     1K-blocks     Used Available Use% Mounted on\n"
                "overlay        263112772 12003412 240394092   5% /\n")
    assert first_divergence(recorded, replayed) is None
    human = "Filesystem      Size  Used Avail Use% Mounted on\noverlay         {}  {}  {}  {} /app\n"
    assert first_divergence(human.format("452G", "274G", "179G", "61%"), human.format("251G", "12G", "230G", "5%")) is None
    # The root's file system is the engine's storage driver; another mount's is the state's.
    assert first_divergence(recorded, replayed.replace("overlay ", "fuse-overlayfs ")) is None
    mounted = "Filesystem     1K-blocks  Used Available Use% Mounted on\n{} 65536  0 65536  0% /data\n"
    assert first_divergence(mounted.format("tmpfs"), mounted.format("shm")) is not None
    assert first_divergence(recorded, replayed.replace("5% /", "5% /data")) is not None


def test_the_machines_processors_and_the_newest_pip_are_of_the_moment() -> None:
    # git-leak-recovery (gpt-oss-120b, recorded on a 32-core machine) and pypi-server (recorded in
    # April, when pip 26.0.1 was PyPI's newest): neither is the state's.
    recorded = ("Delta compression using up to 32 threads\n"
                "[notice] A new release of pip is available: 25.2 -> 26.0.1\n"
                "[notice] To update, run: pip install --upgrade pip\n")
    replayed = recorded.replace("32 threads", "2 threads").replace("26.0.1", "26.3")
    assert first_divergence(recorded, replayed) is None
    # The pip installed is the state's, and so is a thread count printed by anything else.
    assert first_divergence(recorded, replayed.replace("25.2 ->", "24.0 ->")) is not None
    assert first_divergence("make using 32 threads\n", "make using 2 threads\n") is not None


def test_ls_blocks_links_and_directory_sizes_are_the_storage_drivers() -> None:
    # A Terminus-2 pane recorded on one engine's storage (directories of 64 bytes, one link,
    # 12 blocks in all) and the same files replayed on ext4-backed overlay.
    recorded = ("root@5c1e470db76f:/app# ls -la /app\ntotal 12\n"
                "drwxr-xr-x 1 root root  64 Jun 28 21:50 .\n"
                "-rw-r--r-- 1 root root 922 Sep 13  2025 forward.py\n"
                "-rw-r--r-- 1 root root 208 Jun 28 21:50 stolen_A1.npy\nroot@5c1e470db76f:/app#\n")
    replayed = ("root@0a1b2c3d4e5f:/app# ls -la /app\ntotal 24\n"
                "drwxr-xr-x 2 root root 4096 Dec  3 04:20 .\n"
                "-rw-r--r-- 1 root root  922 Sep 13  2025 forward.py\n"
                "-rw-r--r-- 1 root root  208 Dec  3 04:20 stolen_A1.npy\nroot@0a1b2c3d4e5f:/app#\n")
    assert first_divergence(recorded, replayed) is None
    # A file's size is the state's: still compared.
    grown = replayed.replace(" 208 Dec", " 288 Dec")
    divergence = first_divergence(recorded, grown)
    assert divergence is not None and divergence.line == 5 and "208" in divergence.recorded
