"""`exchange_token` against the real daemon and a real RFC 8693 server (Authlib's, see daemon.py):
a derived token for allowed audiences, the same token from the daemon's memory for the same
request with its lists reordered, and the server's refusal of another audience as a problem."""

from __future__ import annotations

import unittest

import tokenvault
from tokenvault import Client

from daemon import AuthorizationServer, Daemon, Provider

ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


class TokenExchangeTests(unittest.TestCase):
    def setUp(self) -> None:
        if not AuthorizationServer.available():
            # An optional peer, as for the daemon's own end-to-end tests: never a silent pass.
            self.skipTest(f"no {AuthorizationServer.PYTHON} with Authlib: run scripts/install-deps.sh --test (or make test)")
        self.server = AuthorizationServer()
        self.addCleanup(self.server.close)
        self.provider = Provider()
        self.addCleanup(self.provider.close)
        instance = {"kind": "oauth2", "issuer": self.server.issuer, "client_id": "vault-client", "client_secret_file": "$SECRET"}
        self.daemon = Daemon(self.provider, providers={"authlib": instance})
        self.addCleanup(self.daemon.close)
        self.vault = Client(self.daemon.socket)
        # The subject: an access token the server issued and still honours, stored as it came.
        issued = self.server.client_credentials("profile email")
        self.own = str(issued["access_token"])
        _, created = self.vault.put(
            "payments/alice", "authlib", {"access_token": self.own, "token_type": "Bearer", "expires_in": 3600}
        )
        self.assertTrue(created)

    def exchanges(self) -> list:
        document = self.server.hook("/test/exchanges")
        self.assertEqual(document["count"], len(document["requests"]))  # type: ignore[arg-type]
        return document["requests"]  # type: ignore[return-value]

    def test_a_derived_token_is_made_once_per_request(self) -> None:
        self.assertEqual(self.vault.token("payments/alice").access_token, self.own)
        derived = self.vault.exchange_token(
            "payments/alice", audience=["api.example", "reports.example"], scopes=["profile", "email"]
        )
        self.assertNotEqual(derived.access_token, self.own)
        self.assertEqual((derived.token_type, derived.issued_token_type), ("Bearer", ACCESS_TOKEN_TYPE))
        self.assertEqual(sorted(derived.scopes or []), ["email", "profile"])
        self.assertIsNotNone(derived.expires_at)
        self.assertNotIn(derived.access_token, repr(derived) + str(derived))
        self.assertIn(ACCESS_TOKEN_TYPE, repr(derived))
        hash(derived)  # still hashable with its list of scopes

        # The same request, its lists in another order (and as tuples): from the daemon's memory.
        again = self.vault.exchange_token(
            "payments/alice", audience=("reports.example", "api.example"), scopes=("email", "profile")
        )
        self.assertEqual(again.access_token, derived.access_token)
        requests = self.exchanges()
        self.assertEqual(len(requests), 1, requests)
        self.assertEqual(sorted(requests[0]["audience"]), ["api.example", "reports.example"])
        self.assertEqual(sorted(requests[0]["scope"].split()), ["email", "profile"])
        self.assertEqual(requests[0]["subject_token_type"], ACCESS_TOKEN_TYPE)

        # One audience as a string is another request; as a one-item list, the same one.
        single = self.vault.exchange_token("payments/alice", audience="api.example")
        self.assertNotIn(single.access_token, (self.own, derived.access_token))
        self.assertEqual(self.vault.exchange_token("payments/alice", audience=["api.example"]), single)
        self.assertEqual(len(self.exchanges()), 2)
        # The credential's own token is as it was.
        self.assertEqual(self.vault.token("payments/alice").access_token, self.own)

    def test_refusals_are_problems(self) -> None:
        with self.assertRaises(tokenvault.Unprocessable) as refused:
            self.vault.exchange_token("payments/alice", audience="evil.example")
        self.assertEqual(refused.exception.code, "provider_rejected")
        self.assertIn("invalid_target", refused.exception.detail or "")
        self.assertEqual(self.exchanges(), [])
        shown = self.vault.show("payments/alice")
        self.assertEqual((shown.generation, shown.last_error), (1, None), "a refused exchange leaves the credential as it is")

        # Neither an audience, a resource nor scopes: the derived token would be the credential's own.
        with self.assertRaises(tokenvault.BadRequest) as no_target:
            self.vault.exchange_token("payments/alice")
        self.assertEqual((no_target.exception.code, no_target.exception.field), ("invalid_field", "audience"))
        with self.assertRaises(tokenvault.NotFound) as missing:
            self.vault.exchange_token("payments/nobody", audience="api.example")
        self.assertEqual(missing.exception.code, "credential_not_found")
        with self.assertRaises(TypeError):
            self.vault.exchange_token("payments/alice", scopes="profile")  # type: ignore[arg-type]
        self.assertNotIn(self.own, str(refused.exception) + str(no_target.exception))


if __name__ == "__main__":
    unittest.main()
