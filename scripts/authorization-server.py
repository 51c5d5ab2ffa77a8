#!/usr/bin/env python3
"""A small OAuth 2.0 / OpenID Connect authorization server built on Authlib, for TokenVault's
tests and README walk-through: a real server that is not ours, so sign-ins are tried against
another implementation's reading of the RFCs.

It serves RFC 8414 and OpenID discovery documents, a JWKS, the authorization endpoint (with a
consent page: `Allow` or `Deny`), the token endpoint (authorization code with PKCE S256 and
OpenID Connect id tokens signed RS256, and rotating refresh tokens), RFC 9207's `iss` in every
authorization response, and, with `--par`, pushed authorization requests (RFC 9126; Authlib has
no grant for them, so the endpoint here is a small extension that keeps the pushed parameters
and replays them when the browser arrives with the `request_uri`), and the device grant (RFC 8628,
Authlib's: a device authorization endpoint, a verification page at `/device` where the person
enters the user code and allows or denies, and `authorization_pending`; `--slow-down N` answers
`slow_down` to the first N polls of each device code, `--device-token-delay S` answers the poll
that redeems a device code S seconds late).

One client (`--client-id`, secret `--client-secret`, `client_secret_basic` or `_post`) and one
person (`person-1`). State is in memory. Test hooks: `POST /test/revoke` revokes every
refresh token; `GET /test/polls` counts the device grant's token requests per user code, lists
the device codes it issued (a test looks for them in the vault's logs), the user codes whose
device code was redeemed, and when each poll came (`poll_times`). `--device-interval` sets the
interval it asks for (1 s). Prints one JSON line with `issuer` once it listens.

    python scripts/authorization-server.py --port 0 --redirect-uri http://127.0.0.1/callback
"""

import argparse
import html
import json
import secrets
import sys
import threading
import time
from urllib.parse import urlencode, urlsplit

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc8628 import DeviceAuthorizationEndpoint, DeviceCodeGrant, DeviceCredentialDict
from authlib.oauth2.rfc8628.errors import SlowDownError
from authlib.oauth2.rfc9207 import IssuerParameter
from authlib.oidc.core import UserInfo
from authlib.oidc.core.grants import OpenIDCode
from flask import Flask, jsonify, request
from joserfc.jwk import RSAKey
from werkzeug.serving import make_server

USER_ID = "person-1"
LOCK = threading.Lock()
CODES = {}
TOKENS = {}
PUSHED = {}
CONSENTS = {}
DEVICES = {}
DEVICE_DECISIONS = {}
DEVICE_POLLS = {}
ISSUED_DEVICE_CODES = []
REDEEMED = []
POLL_TIMES = {}


class Client:
    def __init__(self, client_id, secret, redirect_uris):
        self.client_id = client_id
        self.client_secret = secret
        self.redirect_uris = redirect_uris

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope):
        return scope

    def check_redirect_uri(self, redirect_uri):
        if redirect_uri in self.redirect_uris:
            return True
        # RFC 8252 section 7.3: a loopback redirect URI on any port.
        for registered in self.redirect_uris:
            want, got = urlsplit(registered), urlsplit(redirect_uri)
            if (
                want.scheme == "http"
                and want.hostname in ("127.0.0.1", "::1")
                and (got.scheme, got.hostname, got.path, got.query) == ("http", want.hostname, want.path, want.query)
            ):
                return True
        return False

    def check_client_secret(self, client_secret):
        return secrets.compare_digest(client_secret, self.client_secret)

    def check_endpoint_auth_method(self, method, endpoint):
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type in ("authorization_code", "refresh_token", DeviceCodeGrant.GRANT_TYPE)


class AuthorizationCode(dict):
    def get_redirect_uri(self):
        return self["redirect_uri"]

    def get_scope(self):
        return self["scope"]

    def get_nonce(self):
        return self.get("nonce")

    def get_auth_time(self):
        return self["auth_time"]

    def get_acr(self):
        return None

    def get_amr(self):
        return None

    def is_expired(self):
        return time.time() > self["auth_time"] + 300

    @property
    def code_challenge(self):
        return self.get("code_challenge")

    @property
    def code_challenge_method(self):
        return self.get("code_challenge_method")


class Token(dict):
    def check_client(self, client):
        return client.client_id == self["client_id"]

    def get_scope(self):
        return self["scope"]

    def get_expires_in(self):
        return self["expires_in"]

    def is_expired(self):
        return False

    def is_revoked(self):
        return self.get("revoked", False)

    def get_user(self):
        return USER_ID

    def get_client(self):
        return CLIENT


class CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def save_authorization_code(self, code, req):
        with LOCK:
            CODES[code] = AuthorizationCode(
                code=code,
                client_id=req.client.client_id,
                redirect_uri=req.payload.redirect_uri,
                scope=req.payload.scope,
                nonce=req.payload.data.get("nonce"),
                code_challenge=req.payload.data.get("code_challenge"),
                code_challenge_method=req.payload.data.get("code_challenge_method"),
                auth_time=int(time.time()),
            )

    def query_authorization_code(self, code, client):
        with LOCK:
            found = CODES.get(code)
        if found and found["client_id"] == client.client_id:
            return found
        return None

    def delete_authorization_code(self, authorization_code):
        with LOCK:
            CODES.pop(authorization_code["code"], None)

    def authenticate_user(self, authorization_code):
        return USER_ID


class RotatingRefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token):
        with LOCK:
            token = TOKENS.get(refresh_token)
        if token and not token.is_revoked():
            return token
        return None

    def authenticate_user(self, refresh_token):
        return USER_ID

    def revoke_old_credential(self, refresh_token):
        with LOCK:
            refresh_token["revoked"] = True


class IDToken(OpenIDCode):
    def __init__(self, key, issuer):
        super().__init__(require_nonce=False)
        self.key = key
        self.issuer = issuer

    def exists_nonce(self, nonce, req):
        with LOCK:
            return any(code.get("nonce") == nonce for code in CODES.values())

    def resolve_client_private_key(self, client):
        return self.key

    def get_client_algorithm(self, client):
        return "RS256"

    def get_encode_header(self, client):
        return {"alg": "RS256", "kid": self.key.kid}

    def get_client_claims(self, client):
        return {"iss": self.issuer, "aud": [client.client_id]}

    def generate_user_info(self, user, scope):
        return UserInfo(sub=user, name="Person One")


class Issuer(IssuerParameter):
    def __init__(self, issuer):
        self.issuer = issuer

    def get_issuer(self):
        return self.issuer


class DeviceEndpoint(DeviceAuthorizationEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]
    INTERVAL = 1

    def get_verification_uri(self):
        return ISSUER[0] + "/device"

    def save_device_credential(self, client_id, scope, data):
        with LOCK:
            ISSUED_DEVICE_CODES.append(data["device_code"])
            DEVICES[data["device_code"]] = DeviceCredentialDict(
                client_id=client_id, scope=scope, user_code=data["user_code"],
                expires_at=time.time() + data["expires_in"],
            )


class DeviceGrant(DeviceCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]
    SLOW_DOWN = 0
    TOKEN_DELAY = 0.0

    def query_device_credential(self, device_code):
        with LOCK:
            return DEVICES.get(device_code)

    def query_user_grant(self, user_code):
        with LOCK:
            DEVICE_POLLS[user_code] = DEVICE_POLLS.get(user_code, 0) + 1
            POLL_TIMES.setdefault(user_code, []).append(time.time())
            return DEVICE_DECISIONS.get(user_code)

    def validate_device_credential(self, credential):
        with LOCK:
            polls = DEVICE_POLLS.get(credential.get_user_code(), 0)
        if polls < self.SLOW_DOWN:
            with LOCK:
                DEVICE_POLLS[credential.get_user_code()] = polls + 1
            raise SlowDownError()
        return super().validate_device_credential(credential)

    def should_slow_down(self, credential):
        return False

    def create_token_response(self):
        # A device code is redeemed once (RFC 8628 section 3.5: later polls are refused).
        with LOCK:
            DEVICES.pop(self.request.payload.data.get("device_code"), None)
            REDEEMED.append(self.request.credential.get_user_code())
        response = super().create_token_response()
        time.sleep(self.TOKEN_DELAY)
        return response


ISSUER = [""]


def save_token(token, req):
    with LOCK:
        if "refresh_token" in token:
            TOKENS[token["refresh_token"]] = Token(
                token, client_id=req.client.client_id, scope=token.get("scope", "")
            )


def build(args, issuer):
    global CLIENT
    CLIENT = Client(args.client_id, args.client_secret, args.redirect_uri)
    key = RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig", "alg": "RS256"})
    app = Flask(__name__)
    app.config["OAUTH2_ACCESS_TOKEN_GENERATOR"] = True
    app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
    app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"authorization_code": args.lifetime, "refresh_token": args.lifetime}
    server = AuthorizationServer(app, query_client=lambda cid: CLIENT if cid == CLIENT.client_id else None,
                                 save_token=save_token)
    server.register_grant(CodeGrant, [CodeChallenge(required=True), IDToken(key, issuer)])
    server.register_grant(RotatingRefreshGrant)
    DeviceGrant.SLOW_DOWN = args.slow_down
    DeviceEndpoint.INTERVAL = args.device_interval
    DeviceGrant.TOKEN_DELAY = args.device_token_delay
    server.register_grant(DeviceGrant)
    server.register_endpoint(DeviceEndpoint)
    ISSUER[0] = issuer
    server.register_extension(Issuer(issuer))

    metadata = {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
        "jwks_uri": issuer + "/jwks",
        "response_types_supported": ["code"],
        "device_authorization_endpoint": issuer + "/device_authorization",
        "grant_types_supported": ["authorization_code", "refresh_token", DeviceCodeGrant.GRANT_TYPE],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "authorization_response_iss_parameter_supported": True,
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "scopes_supported": ["openid", "profile", "offline_access"],
    }
    if args.par:
        metadata["pushed_authorization_request_endpoint"] = issuer + "/par"
        metadata["require_pushed_authorization_requests"] = True

    @app.get("/.well-known/oauth-authorization-server")
    @app.get("/.well-known/openid-configuration")
    def discovery():
        return jsonify(metadata)

    @app.get("/jwks")
    def jwks():
        return jsonify({"keys": [key.as_dict(private=False)]})

    @app.post("/par")
    def par():
        # RFC 9126 section 2: the client authenticates as at the token endpoint.
        client = server.authenticate_client(
            server.create_oauth2_request(request), ["client_secret_basic", "client_secret_post"], "token"
        )
        params = {k: v for k, v in request.form.items(multi=True) if k not in ("client_secret",)}
        if "request_uri" in params:
            return jsonify(error="invalid_request", error_description="request_uri in a pushed request"), 400
        params["client_id"] = client.client_id
        request_uri = "urn:ietf:params:oauth:request_uri:" + secrets.token_urlsafe(24)
        with LOCK:
            PUSHED[request_uri] = (params, time.time() + 60)
        return jsonify(request_uri=request_uri, expires_in=60), 201

    def authorization_parameters():
        """The request's parameters: the query, or what was pushed under its request_uri."""
        query = request.args.to_dict()
        if "request_uri" in query:
            with LOCK:
                pushed = PUSHED.pop(query["request_uri"], None)
            if not pushed or pushed[1] < time.time() or pushed[0].get("client_id") != query.get("client_id"):
                return None, "unknown or expired request_uri"
            return pushed[0], None
        if args.par:
            return None, "this server requires pushed authorization requests"
        return query, None

    @app.get("/authorize")
    def authorize():
        params, problem = authorization_parameters()
        if problem:
            return problem, 400
        with app.test_request_context("/authorize", query_string=params):
            try:
                server.get_consent_grant(end_user=USER_ID)
            except Exception as error:  # noqa: BLE001 - shown to the test's browser
                return "invalid authorization request: " + html.escape(str(error)), 400
        consent = secrets.token_urlsafe(16)
        with LOCK:
            CONSENTS[consent] = params
        return (
            "<html><body><p>" + html.escape(params.get("client_id", "")) + " asks for "
            + html.escape(params.get("scope", "")) + "</p>"
            + '<form method="post" action="/consent">'
            + '<input type="hidden" name="consent" value="' + consent + '">'
            + '<button name="decision" value="allow">Allow</button>'
            + '<button name="decision" value="deny">Deny</button></form></body></html>'
        )

    @app.post("/consent")
    def decide():
        with LOCK:
            params = CONSENTS.pop(request.form.get("consent", ""), None)
        if params is None:
            return "unknown consent", 400
        allow = request.form.get("decision") == "allow"
        with app.test_request_context("/authorize", query_string=params):
            return server.create_authorization_response(grant_user=USER_ID if allow else None)

    @app.post("/token")
    def token():
        return server.create_token_response()

    @app.post("/device_authorization")
    def device_authorization():
        return server.create_endpoint_response(DeviceEndpoint.ENDPOINT_NAME)

    @app.get("/device")
    def device_page():
        code = html.escape(request.args.get("user_code", ""))
        return (
            '<html><body><form method="post" action="/device">'
            + '<input name="user_code" value="' + code + '">'
            + '<button name="decision" value="allow">Allow</button>'
            + '<button name="decision" value="deny">Deny</button></form></body></html>'
        )

    @app.post("/device")
    def device_decision():
        user_code = request.form.get("user_code", "")
        with LOCK:
            known = any(d.get_user_code() == user_code for d in DEVICES.values())
            if known:
                DEVICE_DECISIONS[user_code] = (USER_ID, request.form.get("decision") == "allow")
        return ("decided", 200) if known else ("unknown user code", 400)

    @app.get("/test/polls")
    def device_polls():
        with LOCK:
            return jsonify(polls=DEVICE_POLLS, device_codes=sorted(ISSUED_DEVICE_CODES), redeemed=REDEEMED,
                           poll_times=POLL_TIMES)

    @app.post("/test/revoke")
    def revoke_all():
        with LOCK:
            for token in TOKENS.values():
                token["revoked"] = True
        return jsonify(revoked=len(TOKENS))

    return app


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--client-id", default="vault-client")
    parser.add_argument("--client-secret", default="vault-secret")
    parser.add_argument("--redirect-uri", action="append", default=[])
    parser.add_argument("--lifetime", type=int, default=3600, help="access token lifetime in seconds")
    parser.add_argument("--par", action="store_true", help="require pushed authorization requests")
    parser.add_argument("--slow-down", type=int, default=0, help="answer slow_down to the first N device polls")
    parser.add_argument("--device-interval", type=int, default=1, help="the device grant's poll interval")
    parser.add_argument("--device-token-delay", type=float, default=0.0,
                        help="seconds to hold the answer that redeems a device code")
    args = parser.parse_args()
    if not args.redirect_uri:
        args.redirect_uri = ["http://127.0.0.1/callback"]
    # Bound first, so the issuer names the real port.
    holder = {}
    http = make_server(args.host, args.port, lambda e, s: holder["app"](e, s), threaded=True)
    issuer = "http://%s:%d" % (args.host, http.server_port)
    holder["app"] = build(args, issuer)
    print(json.dumps({"issuer": issuer}), flush=True)
    http.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
