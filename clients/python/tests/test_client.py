"""The Python client against the real daemon (see daemon.py): the README's walk-through, every
problem code mapped to its exception, streams that end when the daemon stops, and no token in
anything the client shows that is not a token read."""

from __future__ import annotations

import contextlib
import io
import os
import re
import threading
import time
import unittest
import urllib.parse

import tokenvault
from tokenvault import Client

from daemon import REPOSITORY, Daemon, Provider


class ClientTests(unittest.TestCase):
    def setUp(self) -> None:
        self.provider = Provider()
        self.addCleanup(self.provider.close)
        self.daemon = Daemon(self.provider)
        self.addCleanup(self.daemon.close)
        self.vault = Client(self.daemon.socket)

    def put(self, credential_id: str = "payments/alice") -> tokenvault.Credential:
        credential, created = self.vault.put(credential_id, "idp", self.provider.issue(), labels={"env": "dev"})
        self.assertTrue(created)
        return credential

    def test_the_readme_walk_through(self) -> None:
        # The Python lines of README.md, verbatim, with this test's socket.
        with open(os.path.join(REPOSITORY, "README.md")) as file:
            readme = file.read()
        section = readme[readme.index("From Python, with the standard-library client") :]
        code = section[section.index("```python\n") + len("```python\n") : section.index("```\n", section.index("```python"))]
        self.assertIn('Client(".tokenvault/run/tokenvault.sock")', code)
        code = code.replace('".tokenvault/run/tokenvault.sock"', repr(self.daemon.socket))
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            exec(compile(code, "README.md", "exec"), {})
        self.assertEqual(output.getvalue().splitlines(), ["Bearer at-2", "['payments/carol']"])

    def test_store_read_list_refresh_and_delete(self) -> None:
        stored = self.put()
        self.assertEqual((stored.id, stored.provider, stored.status, stored.labels), ("payments/alice", "idp", "active", {"env": "dev"}))
        self.assertTrue(stored.has_refresh_token)
        token = self.vault.token("payments/alice", min_ttl=60)
        self.assertEqual(token.access_token, self.provider.access)
        self.assertNotIn(token.access_token, repr(token))
        self.assertEqual(self.vault.show("payments/alice").generation, stored.generation)
        _, created = self.vault.put("payments/alice", "idp", '{"access_token":"x","expires_in":600}')
        self.assertFalse(created)

        self.put("payments/bob")
        page = self.vault.list(namespace="payments", limit=1)
        self.assertEqual([c.id for c in page.items], ["payments/alice"])
        self.assertIsNotNone(page.next_cursor)
        self.assertEqual([c.id for c in self.vault.list_all()], ["payments/alice", "payments/bob"])

        time.sleep(1.1)  # limits.on_demand_refresh_seconds (1 here) since the put
        refreshed = self.vault.refresh("payments/bob")
        self.assertGreater(refreshed.generation, 1)
        self.assertEqual(self.vault.token("payments/bob").access_token, self.provider.access)

        deleted = self.vault.delete("payments/bob")
        self.assertFalse(deleted.revocation_pending)
        self.assertIs(deleted.revoked, False, "idp has no revocation endpoint: nothing was revoked")
        with self.assertRaises(tokenvault.NotFound) as caught:
            self.vault.show("payments/bob")
        self.assertEqual(caught.exception.code, "credential_not_found")

    def test_a_sign_in_is_started_and_finished_once(self) -> None:
        started = self.vault.start_sign_in(
            "people/erin", "idp", "https://app.example/cb", scopes=["profile"], labels={"via": "python"}
        )
        self.assertFalse(started.pushed)
        url = urllib.parse.urlsplit(started.authorization_url or "")
        query = dict(urllib.parse.parse_qsl(url.query))
        self.assertEqual(url.path, "/authorize")
        self.assertEqual(query["code_challenge_method"], "S256")
        self.assertEqual(len(query["state"]), 43)
        callback = "https://app.example/cb?code=one-time&state=" + query["state"]
        signed_in = self.vault.finish_sign_in("people/erin", callback)
        self.assertTrue(signed_in.created)
        self.assertEqual(signed_in.credential.id, "people/erin")
        self.assertEqual(signed_in.credential.labels, {"via": "python"})
        with self.assertRaises(tokenvault.ProblemError) as spent:
            self.vault.finish_sign_in("people/erin", callback)
        self.assertEqual(spent.exception.code, "authorization_unknown")
        parameters = self.vault.start_sign_in("people/erin", "idp", "https://app.example/cb", mode="parameters")
        self.assertIsNone(parameters.authorization_url)
        self.assertEqual((parameters.parameters or {})["client_id"], "vault-client")

    def test_a_device_sign_in_is_polled_by_the_daemon(self) -> None:
        started = self.vault.start_sign_in("people/faye", "idp", scopes=["profile"], mode="device")
        self.assertEqual((started.user_code, started.interval), ("WDJB-MJHT", 1))
        self.assertTrue((started.verification_uri or "").endswith("/verify"))
        self.assertIsNone(started.authorization_url)
        deadline = time.time() + 30
        status = self.vault.sign_in_status("people/faye")
        while status.pending and time.time() < deadline:
            time.sleep(0.2)
            status = self.vault.sign_in_status("people/faye")
        self.assertEqual((status.last or {}).get("outcome"), "authorized", status)
        self.assertTrue(self.vault.show("people/faye").has_refresh_token)

    def test_exchange_redeems_a_code(self) -> None:
        exchanged = self.vault.exchange("payments/carol", "idp", code="one-time", code_verifier="v" * 43, redirect_uri="https://app.example/cb")
        self.assertTrue(exchanged.created)
        self.assertEqual(exchanged.token.access_token, self.provider.access)
        self.assertTrue(exchanged.credential.has_refresh_token)
        for token in (exchanged.token.access_token, self.provider.refresh):
            self.assertNotIn(token, repr(exchanged) + str(exchanged))

    def test_watch_and_events_follow_a_refresh(self) -> None:
        self.put()
        time.sleep(1.1)  # limits.on_demand_refresh_seconds (1 here) since the put
        with self.vault.watch("payments/alice") as watch, self.vault.events() as events:
            first = next(watch)
            self.assertEqual(first.id, "payments/alice")
            refreshed = self.vault.refresh("payments/alice")
            self.assertEqual(next(watch).generation, refreshed.generation)
            event = next(events)
            self.assertEqual((event.type, event.credential_id, event.generation), ("refreshed", "payments/alice", refreshed.generation))
            self.vault.delete("payments/alice")
            self.assertEqual([c.status for c in watch], [], "the watch ends when the credential is deleted")
            self.assertEqual(next(events).type, "deleted")

    def test_streams_end_cleanly_when_the_daemon_stops(self) -> None:
        self.put()
        watch = self.vault.watch("payments/alice")
        self.assertEqual(next(watch).id, "payments/alice")
        events = self.vault.events()
        results = {}

        def drain(name: str, iterator) -> None:
            try:
                results[name] = ("ended", list(iterator))
            except Exception as error:  # recorded, and the test fails on it
                results[name] = ("raised", error)

        threads = [threading.Thread(target=drain, args=(name, it)) for name, it in (("watch", watch), ("events", events))]
        for thread in threads:
            thread.start()
        time.sleep(0.3)
        self.daemon.stop()
        for thread in threads:
            thread.join(15)
        self.assertEqual(results.get("watch", ("missing",))[0], "ended", results)
        self.assertEqual(results.get("events", ("missing",))[0], "ended", results)

    def test_a_stream_waits_past_the_client_timeout_and_closes_from_another_thread(self) -> None:
        self.put()
        with self.assertRaises(tokenvault.NotFound):
            self.vault.watch("payments/nobody")
        quick = Client(self.daemon.socket, timeout=1)
        watch = quick.watch("payments/alice")
        first = next(watch)
        # The next line comes 1.5 s later, while this thread waits in the read.
        refreshed = []
        timer = threading.Timer(1.5, lambda: refreshed.append(self.vault.refresh("payments/alice")))
        timer.start()
        self.assertGreater(next(watch).generation, first.generation)
        timer.join(10)  # the watch's line can come before the refresh's own answer
        self.assertEqual([c.generation for c in refreshed], [first.generation + 1])
        results = []
        reader = threading.Thread(target=lambda: results.append(list(watch)))
        reader.start()
        time.sleep(0.3)
        started = time.monotonic()
        watch.close()
        reader.join(5)
        self.assertFalse(reader.is_alive(), "the reading thread did not stop")
        self.assertEqual(results, [[]])
        self.assertLess(time.monotonic() - started, 2)

    def test_calls_through_the_proxy_never_see_the_token(self) -> None:
        self.put()
        with self.vault.call("payments/alice", "GET", "/hello", headers={"Authorization": "Bearer mine"}) as answer:
            self.assertEqual(answer.status, 200)
            self.assertEqual(answer.read(), b"hello from the api\n")
            self.assertFalse(answer.refreshed)
            shown = repr(answer.headers)
        # With `Connection: close` http.client hands the socket to the answer: closing still closes it.
        with self.vault.call("payments/alice", "GET", "/hello", headers={"Connection": "close"}) as answer:
            self.assertEqual(answer.read(), b"hello from the api\n")
        self.assertEqual(answer._connection.unix_socket.fileno(), -1)
        with self.vault.call("payments/alice", "GET", "/redirect") as answer:
            self.assertEqual((answer.status, answer.header("location")), (302, "/v1/credentials/payments/alice/token"))
            self.assertEqual(answer.read(), b"")
        self.assertEqual(self.provider.api_calls[-1]["authorized"], "True")
        usable = list(self.vault.usable_credentials())
        self.assertEqual([(u.id, u.api_base_urls) for u in usable], [("payments/alice", [self.provider.url + "/api"])])
        with self.assertRaises(tokenvault.Unprocessable) as caught:
            self.vault.call("payments/alice", "GET", "https://elsewhere.example/")
        self.assertEqual(caught.exception.code, "upstream_not_allowed")
        for token in self.provider.issued:
            self.assertNotIn(token, shown + repr(usable) + str(caught.exception))

    def test_problems_carry_their_code_and_field(self) -> None:
        self.put()
        cases = [
            (lambda: self.vault.show("payments/nobody"), tokenvault.NotFound, "credential_not_found", None),
            (lambda: self.vault.put("payments/x", "no-such-provider", {"access_token": "a"}), tokenvault.Unprocessable, "unknown_provider", None),
            (lambda: self.vault.put("payments/x", "idp", '{"access_token": }'), tokenvault.BadRequest, "invalid_payload", None),
            (lambda: self.vault.put("payments/x", "idp", {"access_token": 7}), tokenvault.BadRequest, "invalid_field", "token.access_token"),
            (lambda: self.vault.list(limit=100000), tokenvault.BadRequest, "invalid_field", "limit"),
            (lambda: self.vault.token("payments/alice", min_ttl=86400), tokenvault.Conflict, None, None),
        ]
        for call, kind, code, field in cases:
            with self.subTest(code=code):
                with self.assertRaises(kind) as caught:
                    call()
                if code is not None:
                    self.assertEqual(caught.exception.code, code)
                self.assertEqual(caught.exception.status, kind.status_code)
                if field is not None:
                    self.assertEqual(caught.exception.field, field)
                self.assertTrue((caught.exception.instance or "").startswith("urn:tokenvault:request:"))
        with self.assertRaises(ValueError):
            self.vault.show("no-slash")
        with self.assertRaises(tokenvault.ConnectionFailed):
            Client(self.daemon.socket + ".absent").health()

    def test_every_code_the_api_documents_is_mapped_to_the_class_of_its_status(self) -> None:
        with open(os.path.join(REPOSITORY, "docs", "openapi.yaml")) as file:
            text = file.read()
        table = text[text.index("Codes in use:") : text.index("Never sent by the API")]
        documented = {}
        for status, codes in re.findall(r"^\s*\| (\d{3}) \| (.*) \|$", table, re.M):
            for code in re.findall(r"`([a-z_]+)`", codes):
                documented[code] = int(status)
        self.assertGreater(len(documented), 40)
        self.assertEqual(set(documented), set(tokenvault.CODES))
        for code, status in documented.items():
            self.assertEqual(tokenvault.CODES[code].status_code, status, code)
        error = tokenvault.ProblemError.from_reply(418, "application/problem+json", b'{"code":"new_code","status":418}')
        self.assertIs(type(error), tokenvault.ProblemError)


if __name__ == "__main__":
    unittest.main()
