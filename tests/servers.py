"""Helpers for tests that run a server: a real server process (read its log, wait until it answers, stop its
whole process group), or a stdlib HTTP handler served in a thread of the test's own process."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

STOP_SECONDS = 30.0


def log_tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


def stop(proc: subprocess.Popen[bytes], log: Path, name: str) -> None:
    """SIGTERM the server's process group; SIGKILL and fail if it does not exit within STOP_SECONDS."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=STOP_SECONDS)
        raise AssertionError(f"{name} ignored SIGTERM for {STOP_SECONDS} s:\n{log_tail(log)}") from None


def wait_until_up(proc: subprocess.Popen[bytes], url: str, log: Path, name: str, seconds: float) -> None:
    """Poll GET `url` until it answers 200; fail with the server's log when the process exits first or
    `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"{name} exited with {proc.returncode}:\n{log_tail(log)}")
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} did not answer {url} within {seconds:.0f} s:\n{log_tail(log)}")
        time.sleep(0.3)


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on a free loopback port in a daemon thread while the block runs; yields
    "http://127.0.0.1:PORT". Each request gets its own daemon thread, so a handler left hanging does not
    keep the shutdown waiting."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
