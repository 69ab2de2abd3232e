"""A real git smart-HTTP server on 127.0.0.1: git's own `http-backend` (CGI) behind HTTP Basic auth.

Every request is recorded (method, path with query, headers), so a test can prove no credential
travelled in a URL. Repositories under `root` allow partial clones and fetching blobs by id.
"""

from __future__ import annotations

import base64
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class GitHTTPServer:
    def __init__(self, root: Path, user: str, token: str):
        self.root, self.requests = root, []
        expected = "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                self._serve()

            def do_POST(self):
                self._serve()

            def _serve(self):
                server.requests.append((self.command, self.path, dict(self.headers)))
                if self.headers.get("Authorization") != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = self._body()
                path, _, query = self.path.partition("?")
                env = {
                    "GIT_PROJECT_ROOT": str(server.root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "REQUEST_METHOD": self.command,
                    "REMOTE_USER": user,
                    "REMOTE_ADDR": "127.0.0.1",
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "PATH": "/usr/bin:/bin",
                    "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                }
                out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
                head, _, payload = out.partition(b"\r\n\r\n")
                status, headers = 200, []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    data = b""
                    while (size := int(self.rfile.readline().strip() or b"0", 16)) > 0:
                        data += self.rfile.read(size)
                        self.rfile.readline()
                    self.rfile.readline()
                    return data
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> GitHTTPServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def serve_repo(bare: Path) -> None:
    """Let a bare repository serve partial clones and blobs by id."""
    for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant", "http.receivepack"):
        subprocess.run(["git", "-C", str(bare), "config", key, "true"], check=True)
