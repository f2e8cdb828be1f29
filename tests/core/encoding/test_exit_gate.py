"""A process exits cleanly while a daemon thread is encoding (core.encoding.exit_gate)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from core.encoding.exit_gate import ExitGate, Exiting

ROOT = Path(__file__).resolve().parents[3]

# A daemon thread encodes without a pause (as a server's worker may at shutdown); the main
# thread returns. Ungated, the thread is ended inside torch and the process aborts (exit 134).
ENCODING_AT_EXIT = """
import threading, time
from core.encoding.registry import load_encoder

encoder = load_encoder("minilm", device="cpu")
texts = ["my card has still not arrived, what should I do about it now"] * 48
encoding = threading.Event()

def loop():
    while True:
        encoding.set()
        encoder.encode(texts)

threading.Thread(target=loop, daemon=True).start()
encoding.wait(60)
time.sleep(0.5)
print("main returns", flush=True)
"""


def test_exit_while_a_daemon_thread_encodes_is_clean() -> None:
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", ENCODING_AT_EXIT],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "main returns" in done.stdout
        assert "terminate called" not in done.stderr


def test_close_waits_for_calls_under_way_and_refuses_new_ones() -> None:
    gate = ExitGate()
    entered = threading.Event()
    later: list[BaseException] = []

    def call_under_way() -> None:
        with gate.running():
            entered.set()
            time.sleep(0.3)

    def call_after_close() -> None:
        try:
            with gate.running():
                later.append(AssertionError("entered a closed gate"))
        except Exiting as exc:
            later.append(exc)

    threading.Thread(target=call_under_way, daemon=True).start()
    entered.wait(5)
    began = time.monotonic()
    assert gate.close(timeout=5)
    assert time.monotonic() - began >= 0.2  # it waited for the call under way
    assert gate.active == 0 and gate.closed
    # refused before native code, in plain Python: the thread unwinds and ends (a thread held
    # at the gate would keep a non-daemon thread, and the exit that joins it, waiting for ever)
    late = threading.Thread(target=call_after_close)
    late.start()
    late.join(5)
    assert not late.is_alive()
    assert [type(e) for e in later] == [Exiting]


def test_close_gives_up_after_its_timeout() -> None:
    gate = ExitGate()
    release = threading.Event()

    def stuck() -> None:
        with gate.running():
            release.wait(5)

    threading.Thread(target=stuck, daemon=True).start()
    while gate.active == 0:
        time.sleep(0.01)
    assert not gate.close(timeout=0.1)
    release.set()
