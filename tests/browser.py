"""Open a page in Debian's headless Chromium and read back what it shows and what its console said.

No driver: the explorer keeps its state in the URL's hash, so a filter or an opened question is a URL,
and `--dump-dom` returns the document after its scripts ran. Console messages (errors included, as
"Uncaught ...") come on stderr with `--enable-logging=stderr`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

_CONSOLE = re.compile(r"INFO:CONSOLE[^\]]*\] (.*)")


def chromium() -> str:
    """The browser's path; scripts/test.sh installs Debian's `chromium` (scripts/chromium.sh)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise AssertionError("chromium is not installed: run bash scripts/chromium.sh (Debian's package)")
    return found


def open_page(page: Path, fragment: str = "", virtual_time: bool = True) -> tuple[str, list[str]]:
    """(the DOM after the page's scripts ran, its console messages) for file://PAGE#FRAGMENT.

    With `virtual_time` the browser fast-forwards timers for up to 5 s before the dump, so anything a page
    schedules has run; without it, clocks read in the page are wall time (for benchmarks)."""
    url = f"{page.resolve().as_uri()}#{fragment}" if fragment else page.resolve().as_uri()
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            *(["--virtual-time-budget=5000"] if virtual_time else []),
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, _CONSOLE.findall(done.stderr)
