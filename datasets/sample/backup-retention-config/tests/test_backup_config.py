import os
import stat
import subprocess


def backupctl(*args):
    return subprocess.run(["/usr/local/bin/backupctl", *args], capture_output=True, text=True, timeout=30)


def show(key):
    done = backupctl("show", key)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_target_moved():
    assert show("target").rstrip("/") == "/srv/backups/data"


def test_retention_two_weeks():
    assert int(show("retention_days")) == 14


def test_excludes_swap_and_tmp_files():
    assert {"*.swp", "*.tmp"} <= set(show("exclude").split())


def test_target_directory_is_private():
    info = os.stat("/srv/backups/data")
    assert stat.S_ISDIR(info.st_mode)
    assert info.st_uid == 0
    assert stat.S_IMODE(info.st_mode) == 0o700


def test_check_passes():
    done = backupctl("check")
    assert done.returncode == 0, done.stdout
    assert "configuration OK" in done.stdout
