"""Problems parsed from the daemon's answers, without a daemon: classes, fields, what is quoted."""

from __future__ import annotations

import pickle
import unittest

import tokenvault
from tokenvault import ProblemError


class ProblemParsingTests(unittest.TestCase):
    def test_a_problem_document_becomes_its_codes_class(self) -> None:
        error = ProblemError.from_reply(
            400,
            "application/problem+json",
            b'{"status":400,"code":"invalid_field","field":"limit","detail":"too big","instance":"urn:tokenvault:request:x"}',
        )
        self.assertIsInstance(error, tokenvault.BadRequest)
        self.assertEqual((error.code, error.field, error.instance), ("invalid_field", "limit", "urn:tokenvault:request:x"))
        self.assertIn("field limit", str(error))

    def test_an_answer_without_a_document_is_quoted_only_from_an_error_status(self) -> None:
        failed = ProblemError.from_reply(502, "text/html", b"<html>bad gateway</html>")
        self.assertIsInstance(failed, tokenvault.BadGateway)
        self.assertEqual(failed.code, "http_502")
        self.assertIn("bad gateway", str(failed))
        # A 200 that is not what was asked for may carry a token: never quoted.
        success = ProblemError.from_reply(200, "application/json", b'{"access_token":"secret-token"}')
        self.assertNotIn("secret-token", str(success) + repr(success.detail))

    def test_errors_survive_pickling(self) -> None:
        for error in (
            tokenvault.Conflict(409, "needs_reauth", title="t", detail="d", field="f", permission="p", instance="i"),
            tokenvault.ConnectionFailed("/run/x.sock", OSError(2, "No such file")),
            tokenvault.UnexpectedResponse(200, "not JSON"),
        ):
            copy = pickle.loads(pickle.dumps(error))
            self.assertIs(type(copy), type(error))
            self.assertEqual(str(copy), str(error))
            self.assertEqual(repr(vars(copy)), repr(vars(error)))


class EventParsingTests(unittest.TestCase):
    def test_a_failed_sign_in_of_a_credential_that_does_not_exist_parses(self) -> None:
        from tokenvault.models import Event

        event = Event.from_json(
            {
                "type": "authorization_failed",
                "credential_id": "people/jane",
                "at": "2026-12-07T08:00:00.000Z",
                "error": {"code": "access_denied", "message": "the device sign-in ended without tokens"},
            }
        )
        self.assertEqual((event.status, event.generation), (None, None))
        self.assertEqual(event.error["code"], "access_denied")


class CredentialParsingTests(unittest.TestCase):
    DOCUMENT = {
        "id": "agents/reports",
        "namespace": "agents",
        "name": "reports",
        "provider": "billing-api",
        "kind": "oauth2",
        "status": "active",
        "generation": 2,
        "scopes": ["read"],
        "labels": {},
        "issued_at": "2026-12-07T08:00:00.000Z",
        "created_at": "2026-12-07T08:00:00.000Z",
        "updated_at": "2026-12-07T08:00:00.000Z",
        "has_refresh_token": False,
        "has_id_token": False,
    }

    def test_a_grant_is_parsed(self) -> None:
        from tokenvault.models import Credential, Grant

        grant = {
            "audience": ["https://api.example"],
            "requested_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "resource": [],
            "scopes": ["read"],
            "subject": "payments/bob",
            "type": "token_exchange",
            "added_later": True,
        }
        credential = Credential.from_json({**self.DOCUMENT, "grant": grant, "also_added_later": 1})
        self.assertEqual(
            credential.grant,
            Grant(
                type="token_exchange",
                scopes=["read"],
                audience=["https://api.example"],
                resource=[],
                subject="payments/bob",
                requested_token_type="urn:ietf:params:oauth:token-type:jwt",
            ),
        )
        # Members this client does not know yet are still in raw; the lists are left out of the hash.
        self.assertTrue(credential.raw["grant"]["added_later"])
        self.assertEqual(hash(credential.grant), hash(Grant.from_json(grant)))

    def test_a_client_credentials_grant_has_no_subject(self) -> None:
        from tokenvault.models import Credential, Grant

        grant = {"type": "client_credentials", "scopes": ["read"], "audience": [], "resource": ["https://api.example"]}
        self.assertEqual(
            Credential.from_json({**self.DOCUMENT, "grant": grant}).grant,
            Grant(type="client_credentials", scopes=["read"], resource=["https://api.example"]),
        )

    def test_a_credential_without_a_grant_has_none(self) -> None:
        from tokenvault.models import Credential

        self.assertIsNone(Credential.from_json(self.DOCUMENT).grant)


if __name__ == "__main__":
    unittest.main()
