import signal
import sys
import time

from stream_worker.launchers.process import LoggedProcess

PRINT_THEN_WAIT = "import sys, time; print('hello from the child', flush=True); time.sleep(60)"
IGNORE_SIGTERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('up', flush=True); time.sleep(60)"
)


def wait_for_output(process: LoggedProcess, text: str) -> None:
    deadline = time.monotonic() + 10
    while text not in process.log_tail():
        assert time.monotonic() < deadline, process.log_tail()
        time.sleep(0.02)


def test_the_log_tail_holds_the_output_and_stop_ends_the_process() -> None:
    process = LoggedProcess([sys.executable, "-c", PRINT_THEN_WAIT], "test-")
    wait_for_output(process, "hello from the child")
    assert process.is_running()
    assert process.stop() is True
    assert not process.is_running()
    assert process.log_tail() == ""  # the log went with it


def test_a_process_that_ignores_sigterm_is_killed_after_the_timeout() -> None:
    process = LoggedProcess([sys.executable, "-c", IGNORE_SIGTERM], "test-")
    wait_for_output(process, "up")
    assert process.stop(timeout_s=0.5) is False
    assert not process.is_running()


def test_kill_and_other_signals_and_the_environment() -> None:
    process = LoggedProcess(
        [sys.executable, "-c", "import os, time; print(os.environ['ONLY_HERE'], flush=True); time.sleep(60)"],
        "test-",
        {"ONLY_HERE": "given", "PATH": "/usr/bin"},
    )
    wait_for_output(process, "given")
    process.kill()
    assert process.stop(signum=signal.SIGINT) is True  # already gone: nothing to wait for
    assert not process.is_running()
