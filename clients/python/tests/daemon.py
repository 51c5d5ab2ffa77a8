"""The real daemon for the tests: the `tokenvault` binary `make test` built (`$TOKENVAULT_BIN`, by
default `.build/debug/tokenvault` of the repository), on a fresh vault, with a loopback OAuth
server that rotates refresh tokens and serves as the proxy's upstream, and, where a test needs a
real authorization server, the Authlib one of `scripts/authorization-server.py`."""

from __future__ import annotations

import base64
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Mapping, Optional
from urllib.parse import parse_qs

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BINARY = os.environ.get("TOKENVAULT_BIN") or os.path.join(REPOSITORY, ".build", "debug", "tokenvault")


class Provider:
    """A loopback authorization server and API: `/token` answers refresh and code grants with
    fresh tokens (rotating the refresh token, refusing a spent one), `/api/...` answers 200 to the
    current access token and 401 to anything else. Every token it issued is kept, so a test can
    search the client's results for them."""

    def __init__(self) -> None:
        self.issued: List[str] = []
        self.access: Optional[str] = None
        self.refresh: Optional[str] = None
        self.api_calls: List[Dict[str, str]] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def _answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                if self.path == "/device":
                    # RFC 8628 section 3.2, approved at once: the first poll gets tokens.
                    answer = {"device_code": "device-code-1", "user_code": "WDJB-MJHT",
                              "verification_uri": provider.url + "/verify", "expires_in": 60, "interval": 1}
                    return self._answer(200, json.dumps(answer).encode())
                if self.path != "/token":
                    return self._answer(404, b"{}")
                grant = form.get("grant_type", [""])[0]
                if grant == "refresh_token" and form.get("refresh_token", [""])[0] != provider.refresh:
                    return self._answer(400, b'{"error":"invalid_grant"}')
                if grant not in ("refresh_token", "authorization_code", "urn:ietf:params:oauth:grant-type:device_code"):
                    return self._answer(400, b'{"error":"unsupported_grant_type"}')
                self._answer(200, json.dumps(provider.issue()).encode())

            def do_GET(self) -> None:
                if not self.path.startswith("/api/"):
                    return self._answer(404, b"{}")
                if self.path == "/api/redirect":
                    # Off the allowed bases, onto a route of the daemon itself: never to be followed.
                    self.send_response(302)
                    self.send_header("Location", "/v1/credentials/payments/alice/token")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                authorization = self.headers.get("Authorization") or ""
                provider.api_calls.append({"path": self.path, "authorized": str(authorization == f"Bearer {provider.access}")})
                if authorization != f"Bearer {provider.access}":
                    return self._answer(401, b'{"error":"invalid_token"}')
                self._answer(200, b"hello from the api\n", "text/plain")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def issue(self) -> Dict[str, object]:
        self.access, self.refresh = "at-" + secrets.token_urlsafe(16), "rt-" + secrets.token_urlsafe(16)
        self.issued += [self.access, self.refresh]
        return {"access_token": self.access, "refresh_token": self.refresh, "token_type": "Bearer", "expires_in": 3600}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Receiver:
    """A loopback webhook endpoint: keeps each delivery's headers and body as they arrived."""

    def __init__(self) -> None:
        self.deliveries: List[Dict[str, object]] = []
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.arrived:
                    receiver.deliveries.append({"headers": dict(self.headers.items()), "body": body})
                    receiver.arrived.notify_all()
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, event_type: str, timeout: float = 20) -> Dict[str, object]:
        """The first delivery whose body's `type` is `event_type`."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for delivery in self.deliveries:
                    if json.loads(delivery["body"]).get("type") == event_type:  # type: ignore[arg-type]
                        return delivery
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {event_type} delivery within {timeout} s")
                self.arrived.wait(left)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class AuthorizationServer:
    """`scripts/authorization-server.py`, a real OAuth server built on Authlib (client
    `vault-client`, secret `vault-secret`), run with the Python environment `make test` installs
    it in (`.build/test-venv`); `available()` says whether that environment is there."""

    PYTHON = os.path.join(REPOSITORY, ".build", "test-venv", "bin", "python")
    SCRIPT = os.path.join(REPOSITORY, "scripts", "authorization-server.py")

    @classmethod
    def available(cls) -> bool:
        return os.access(cls.PYTHON, os.X_OK)

    def __init__(self, *arguments: str) -> None:
        self.log = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(
            [self.PYTHON, self.SCRIPT, "--port", "0", *arguments], stdout=subprocess.PIPE, stderr=self.log
        )
        # It prints one JSON line with its issuer once it listens.
        deadline = time.monotonic() + 30
        line = b""
        assert self.process.stdout is not None
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.process.stdout], [], [], left)[0]:
                self._fail("did not say its issuer within 30 s")
            chunk = os.read(self.process.stdout.fileno(), 4096)
            if not chunk:
                self._fail("ended")
            line += chunk
        self.issuer: str = json.loads(line)["issuer"]

    def _fail(self, what: str) -> None:
        self.close()
        self.log.seek(0)
        raise RuntimeError(f"the authorization server {what}:\n{self.log.read()}")

    def client_credentials(self, scope: str = "") -> Dict[str, object]:
        """A token response of the client credentials grant, asked for directly (not by the vault)."""
        form = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": scope}).encode()
        basic = base64.b64encode(b"vault-client:vault-secret").decode()
        request = urllib.request.Request(self.issuer + "/token", data=form, headers={"Authorization": "Basic " + basic})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())

    def hook(self, path: str) -> Dict[str, object]:
        """A `GET /test/...` hook's JSON answer."""
        with urllib.request.urlopen(self.issuer + path, timeout=30) as answer:
            return json.loads(answer.read())

    def close(self) -> None:
        # SIGKILL: it holds nothing worth a graceful end.
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.log.close()


class Daemon:
    """`tokenvault serve` on a fresh vault in a temporary directory, with provider instance `idp`,
    the instances in `providers` (a `client_secret_file` of "$SECRET" names a file holding
    `vault-secret`), and, given a receiver, a webhook endpoint `receiver` whose secret is
    `webhook_secret`."""

    def __init__(
        self,
        provider: Provider,
        receiver: Optional[Receiver] = None,
        providers: Optional[Mapping[str, Mapping[str, object]]] = None,
    ) -> None:
        if not os.access(BINARY, os.X_OK):
            raise RuntimeError(f"no tokenvault binary at {BINARY}: run `swift build` (or `make test`), or set TOKENVAULT_BIN")
        self.directory = tempfile.mkdtemp(prefix="tv-python-")
        self.data = os.path.join(self.directory, "data")
        self.socket = os.path.join(self.directory, "tv.sock")
        secret = os.path.join(self.directory, "client.secret")
        with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as file:
            file.write("vault-secret")
        self.config = os.path.join(self.directory, "config.json")
        subprocess.run([BINARY, "init", "--data-dir", self.data], check=True, capture_output=True)
        webhooks: Dict[str, object] = {}
        self.webhook_secret = ""
        if receiver is not None:
            secret_file = os.path.join(self.directory, "hook.whsec")
            subprocess.run([BINARY, "webhooks", "secret", secret_file], check=True, capture_output=True)
            with open(secret_file) as file:
                self.webhook_secret = file.read().strip()
            webhooks = {"webhooks": {"endpoints": {"receiver": {"url": receiver.url, "secret_file": secret_file}}}}
        with open(self.config, "w") as file:
            json.dump(
                {
                    **webhooks,
                    "providers": {
                        # What `make run` has without a configuration file (the README's examples use it).
                        "oauth2": {"kind": "oauth2"},
                        "idp": {
                            "kind": "oauth2",
                            "token_endpoint": provider.url + "/token",
                            "client_id": "vault-client",
                            "client_secret_file": secret,
                            "api_base_urls": [provider.url + "/api"],
                            "authorization_endpoint": provider.url + "/authorize",
                            "device_authorization_endpoint": provider.url + "/device",
                            "redirect_uris": ["https://app.example/cb"],
                        },
                        **{
                            name: {
                                key: secret if (key, value) == ("client_secret_file", "$SECRET") else value
                                for key, value in instance.items()
                            }
                            for name, instance in (providers or {}).items()
                        },
                    },
                    "limits": {"on_demand_refresh_seconds": 1},
                },
                file,
            )
        self.log = open(os.path.join(self.directory, "daemon.log"), "w+")
        self.process = subprocess.Popen(
            [BINARY, "serve", "--data-dir", self.data, "--socket", self.socket],
            env={**os.environ, "TOKENVAULT_CONFIG": self.config, "TOKENVAULT_LOG_LEVEL": "warning"},
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        # Connected, not only created: the socket file exists a moment before the daemon listens.
        while not self._accepts():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                self.log.seek(0)
                raise RuntimeError("the daemon did not start:\n" + self.log.read())
            time.sleep(0.05)

    def _accepts(self) -> bool:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(self.socket)
            return True
        except OSError:
            return False
        finally:
            probe.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
