"""A loopback HTTP server for the kubernetes client to talk to: handlers answer JSON, every path is logged."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubernetes import client


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler whose ``answer`` writes a JSON document (or raw bytes) and logs ``self.path``."""

    def answer(self, code: int, body: dict[str, Any] | bytes) -> None:
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(handler: type[JsonHandler]) -> Iterator[tuple[Any, list[str]]]:
    """Serve ``handler`` on a free loopback port; yields an ``ApiClient`` for it and the paths requested."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    requests: list[str] = []
    server.requests = requests  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{server.server_port}")), requests
    finally:
        server.shutdown()
        server.server_close()
