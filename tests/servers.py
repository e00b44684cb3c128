"""Helpers for tests that run a real server process: read its log, stop its whole process group."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

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
