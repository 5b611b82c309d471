import json
import os
import shutil
import signal
import time

from .conftest import start_stack, stop_stack


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_gone(pid, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_sigterm_stops_cleanly(tmp_path):
    ready = tmp_path / "ready.json"
    proc, info = start_stack("--ready-file", str(ready))
    assert json.loads(ready.read_text()) == info
    assert _alive(info["redis_pid"]) and os.path.isdir(info["tmp_dir"])
    assert stop_stack(proc, signal.SIGTERM) == 0
    assert _wait_gone(info["redis_pid"])
    assert not os.path.exists(info["tmp_dir"])
    assert not ready.exists()


def test_sigint_stops_cleanly():
    proc, info = start_stack()
    assert stop_stack(proc, signal.SIGINT) == 0
    assert _wait_gone(info["redis_pid"])


def test_redis_dies_with_stack_on_sigkill():
    proc, info = start_stack()
    assert stop_stack(proc, signal.SIGKILL) == -signal.SIGKILL
    assert _wait_gone(info["redis_pid"])  # PR_SET_PDEATHSIG
    shutil.rmtree(info["tmp_dir"], ignore_errors=True)  # a SIGKILLed stack cannot clean up its temp dir


def test_startup_json_line(stack):
    for k in ("redis_rest_url", "redis_token", "redis_readonly_token", "data_api_url", "data_api_key",
              "data_source", "database"):
        assert stack[k]
    assert stack["redis_rest_url"].startswith("http://127.0.0.1:")


def test_exit_with_parent(tmp_path):
    """If whatever started the stack dies, the stack (and so redis-server) stops too."""
    import subprocess
    import sys

    from .conftest import ROOT
    ready = tmp_path / "ready.json"
    launcher = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess,sys,time; subprocess.Popen([sys.executable,'-m','stack','--redis-rest-port','0',"
         f"'--data-api-port','0','--exit-with-parent','--ready-file',{str(ready)!r}]); time.sleep(60)"],
        cwd=ROOT)
    deadline = time.monotonic() + 20
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    info = json.loads(ready.read_text())
    launcher.kill()
    launcher.wait()
    assert _wait_gone(info["pid"]) and _wait_gone(info["redis_pid"])
    assert not os.path.exists(info["tmp_dir"])
