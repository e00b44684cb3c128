"""The Studio server's gate (langgraph.json `auth`): `langgraph dev` answers only its own user.

Binding 127.0.0.1 keeps other machines out, but not the web pages open in the user's own browser: any page
can send requests to 127.0.0.1 (CORS only stops it reading most answers), and through DNS rebinding (its
own host name re-pointed at 127.0.0.1) it reads them too. So every request must

- carry the token of the `studio_token` setting (HOPGRAPH_STUDIO_TOKEN) as `Authorization: Bearer TOKEN`,
  which no page knows; with no token set, no request is answered;
- name a loopback host in its Host header (a rebound page's request names the page's host);
- come from no web origin but Studio's (a browser names the page it came from in Origin).

langgraph.json sets `disable_studio_auth`, or a request saying `x-auth-scheme: langsmith` would skip this
gate altogether in `langgraph dev`, and limits CORS to Studio's origin.
"""

from __future__ import annotations

import hmac

from langgraph_sdk import Auth

from hopgraph.settings import Settings

STUDIO_ORIGIN = "https://smith.langchain.com"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})

auth = Auth()
_token = Settings().studio_token


def _host(header: str) -> str:
    """A Host header without its port ("127.0.0.1:2024" -> "127.0.0.1", "[::1]:2024" -> "[::1]")."""
    return header.rsplit(":", 1)[0] if header.rsplit(":", 1)[-1].isdigit() else header


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> Auth.types.MinimalUserDict:
    """The one user: refused (401/403, one line saying why) unless the request passes all three checks."""
    host = headers.get(b"host", b"").decode("latin-1").lower()
    if _host(host) not in LOOPBACK_HOSTS:
        raise Auth.exceptions.HTTPException(403, f"Host {host!r} is not this machine's loopback address.")
    origin = headers.get(b"origin")
    if origin is not None and origin.decode("latin-1") != STUDIO_ORIGIN:
        raise Auth.exceptions.HTTPException(403, f"Origin {origin.decode('latin-1')!r} is not Studio's.")
    if _token is None:
        raise Auth.exceptions.HTTPException(
            401, "No studio_token is set: start langgraph dev with HOPGRAPH_STUDIO_TOKEN (see the README)."
        )
    sent = headers.get(b"authorization", b"").decode("latin-1")
    expected = f"Bearer {_token.get_secret_value()}"
    if not hmac.compare_digest(sent.encode("utf-8"), expected.encode("utf-8")):
        raise Auth.exceptions.HTTPException(401, "Send the studio token: Authorization: Bearer TOKEN.")
    return {"identity": "hopgraph-studio-user"}
