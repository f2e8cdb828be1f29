"""A script the app's pages run before Gradio's own: ``assets/frames.js``, which slows the loops
of animation frames that run on (Gradio 6.31's page keeps one going for as long as it is open).

Gradio adds the scripts given as ``head`` from the page's JavaScript, after its modules have
run, too late to wrap what they took at their start (``requestAnimationFrame``); this middleware
writes the script first in the ``<head>`` of each HTML page the app serves.

Example:
    >>> first_in_head(b"<html><head><title>t</title></head></html>", "go()")
    b'<html><head><script>go()</script><title>t</title></head></html>'
    >>> first_in_head(b"<p>no head</p>", "go()")
    b'<p>no head</p>'
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEAD = b"<head>"


def first_in_head(html: bytes, script: str) -> bytes:
    """``html`` with ``<script>script</script>`` first in its ``<head>`` (unchanged without one)."""
    at = html.find(HEAD)
    if at < 0:
        return html
    at += len(HEAD)
    return html[:at] + b"<script>" + script.encode("utf-8") + b"</script>" + html[at:]


class FirstScript:
    """ASGI middleware: ``script`` first in the ``<head>`` of every uncompressed HTML answer to a
    GET (the app's page and Gradio's sign-in page); other answers pass as they are."""

    def __init__(self, app: ASGIApp, script: str) -> None:
        self.app = app
        self.script = script

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body: list[bytes] = []

        async def send_first_script(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                html = headers.get("content-type", "").startswith("text/html")
                if html and "content-encoding" not in headers:
                    start = message  # held until the whole page is here
                    return
            elif message["type"] == "http.response.body" and start is not None:
                body.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                page = first_in_head(b"".join(body), self.script)
                headers = MutableHeaders(scope=start)
                headers["content-length"] = str(len(page))
                await send(start)
                await send({"type": "http.response.body", "body": page})
                return
            await send(message)

        await self.app(scope, receive, send_first_script)
