import os
import subprocess

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CLEAN_ENV = {"PATH": DEFAULT_PATH, "HOME": "/nonexistent", "LANG": "C.UTF-8"}


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, env=CLEAN_ENV, cwd="/", timeout=30, **kwargs)


def test_command_on_default_path():
    found = [d for d in DEFAULT_PATH.split(":") if os.access(os.path.join(d, "wordstat"), os.X_OK)]
    assert found, "wordstat is not on the default PATH"


def test_version():
    done = run(["wordstat", "--version"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "wordstat 1.2.0"


def test_count_from_stdin():
    done = run(["wordstat", "count"], input="one two\nthree\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "3", "14"]


def test_importable_by_system_python():
    done = run(["python3", "-c", "import wordstat; print(wordstat.__version__, wordstat.count_text('a b'))"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1.2.0 (0, 2, 3)"
