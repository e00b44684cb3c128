"""The one redaction every line hopgraph writes or prints goes through where it may hold a secret.

Settings carry secrets inside otherwise public values: a `base_url` with `user:password@` or `?api-key=`, a
`chroma_url` with credentials, a Postgres `checkpointer` URL or `password=` DSN. Those values reach run
lines and reports (shared with colleagues), provider error messages (stored as a question's `error`) and
the command line's error lines; `redact` keeps what a reader needs (scheme, host, port, path, the names of
query parameters) and masks the rest, and leaves text without such parts unchanged, so an ordinary URL
(and every key built from it) reads as before.
"""

from __future__ import annotations

import re

MASK = "***"
_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<rest>[^\s'\"<>`]+)")
_DSN_PASSWORD = re.compile(r"(?i)\b(password|passwd|pwd)(\s*=\s*)('[^']*'|\"[^\"]*\"|[^\s'\"]+)")


def redact(text: str) -> str:
    """`text` with every URL's credentials (`user:password@`) and query values, and every DSN's
    `password=...`, replaced by `***`."""
    return _DSN_PASSWORD.sub(lambda m: f"{m[1]}{m[2]}{MASK}", _URL.sub(_redact_url, text))


def _redact_url(match: re.Match[str]) -> str:
    """One URL, its userinfo, query values and fragment masked; taken apart by hand, since urllib's
    round trip rewrites some URLs it does not mask (`sqlite:////abs/path` loses a slash)."""
    rest, hash_mark, fragment = match["rest"].partition("#")
    rest, mark, query = rest.partition("?")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = f"{MASK}@{authority.rsplit('@', 1)[1]}"
    if mark:  # a parameter's name is kept, unless there is no `=` and the name may be the secret itself
        query = "&".join(
            f"{part.split('=', 1)[0]}={MASK}" if "=" in part else MASK for part in query.split("&")
        )
    return f"{match['scheme']}{authority}{slash}{path}{mark}{query}{hash_mark}{MASK if fragment else ''}"
