#!/usr/bin/env python3
"""A small OAuth 2.0 / OpenID Connect authorization server built on Authlib, for TokenVault's
tests and README walk-through: a real server that is not ours, so sign-ins are tried against
another implementation's reading of the RFCs.

It serves RFC 8414 and OpenID discovery documents, a JWKS, the authorization endpoint (with a
consent page: `Allow` or `Deny`), the token endpoint (authorization code with PKCE S256 and
OpenID Connect id tokens, and rotating refresh tokens), RFC 9207's `iss` in every
authorization response, and, with `--par`, pushed authorization requests (RFC 9126; Authlib has
no grant for them, so the endpoint here is a small extension that keeps the pushed parameters
and replays them when the browser arrives with the `request_uri`), and the device grant (RFC 8628,
Authlib's: a device authorization endpoint, a verification page at `/device` where the person
enters the user code and allows or denies, and `authorization_pending`; `--slow-down N` answers
`slow_down` to the first N polls of each device code, `--device-token-delay S` answers the poll
that redeems a device code S seconds late).

Id tokens are signed with `--id-token-alg` (RS256, the default, or ES256); the JWKS lists every
key that has been current, old and new. A refresh answer carries a new id token too when the token's
scope has `openid` (OpenID Connect Core section 12.2: iss, sub, aud, iat, exp five minutes on,
auth_time, no nonce). The client credentials grant (Authlib's) issues access tokens without a
refresh token, takes RFC 8707 `resource` (repeatable) and `audience`, and
`--client-credentials-delay S` holds each answer S seconds. Token exchange (RFC 8693; Authlib has
no grant for it, so it is a small grant class here) swaps an access or refresh token this server
issued and still honours for a new access token; `audience` must be one of `--exchange-audience`
(repeatable; `api.example` and `reports.example` unless given), else `invalid_target`. Access
tokens from every grant last `--lifetime` seconds, except the device grant's (an hour).

One client (`--client-id`, secret `--client-secret`) and one person (`person-1`). The client
authenticates as `--client-auth` says: `client_secret` (the default: `client_secret_basic` or
`_post`), `private_key_jwt` or `client_secret_jwt` (RFC 7523 assertions, Authlib's; HS256 with the
secret for the latter; `iss` and `sub` the client id, `aud` the token endpoint or the issuer (at
`/par` also its own URL), `exp`, a `jti` used once). That one method is all the token endpoint, the
device authorization endpoint and `/par` accept. State is in memory.

Test hooks: `POST /test/revoke` revokes every refresh token; `GET /test/polls` counts the device
grant's token requests per user code, lists the device codes it issued (a test looks for them in
the vault's logs), the user codes whose device code was redeemed, and when each poll came
(`poll_times`). `--device-interval` sets the interval it asks for (1 s).
`POST /test/rotate-signing-key` makes a new id-token key (answers its `kid`) that signs from then
on; `GET /test/jwks-fetches` counts `GET /jwks`. `POST /test/id-token-fault` with
`{"fault": F}` spoils every id token issued until F is null: `tampered`, `expired`,
`wrong_audience`, `alg_none`, `hs256_public_key` (HMAC keyed with the signing key's public PEM),
`unknown_kid`. `POST /test/metadata-issuer` with `{"issuer": X}` makes both discovery documents
name X (null: the real one); `POST /test/metadata-down` with `{"down": true}` makes them answer
503. `POST /test/client-jwks` with a JWKS registers the client's public
keys for `private_key_jwt` (until then every assertion is refused). `POST /test/client-secret` with
`{"secret": S}` changes the client's secret (every request with the old one is then
`invalid_client`). `GET /test/client-auth` lists
the method each token request authenticated with; `GET /test/client-credentials` and
`GET /test/exchanges` list the client credentials and token exchange requests that got a token.
Prints one JSON line with `issuer` once it listens.

    python scripts/authorization-server.py --port 0 --redirect-uri http://127.0.0.1/callback
"""

import argparse
import base64
import hashlib
import hmac
import html
import json
import secrets
import sys
import threading
import time
import warnings
from urllib.parse import urlencode, urlsplit

from authlib.integrations.flask_oauth2 import AuthorizationServer, client_authenticated
from authlib.oauth2.rfc6749 import (
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
    OAuth2Error,
    UnauthorizedClientError,
    grants,
    scope_to_list,
)
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc8628 import DeviceAuthorizationEndpoint, DeviceCodeGrant, DeviceCredentialDict
from authlib.oauth2.rfc8628.errors import SlowDownError
from authlib.oauth2.rfc9207 import IssuerParameter
from authlib.oidc.core import UserInfo
from authlib.oidc.core.grants import OpenIDCode
from authlib.oidc.core.grants.util import generate_id_token, is_openid_scope
from flask import Flask, jsonify, request
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, OctKey, RSAKey
from werkzeug.serving import make_server

USER_ID = "person-1"
LOCK = threading.Lock()
# Held while an id token is made and while the key rotates, so a token's kid is its signer's.
SIGNING_LOCK = threading.Lock()
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
ACCESS_TOKENS = {}
CLIENT_AUTHS = []
CLIENT_CREDENTIALS = []
EXCHANGES = []
USED_JTIS = set()
# Id-token signing: the alg, every key that has been current (the last signs), the fault.
SIGNING = {"alg": "RS256", "keys": [], "fault": None}
TEST = {"jwks_fetches": 0, "metadata_issuer": None, "metadata_down": False, "client_jwks": None}
# What the token endpoint, the device authorization endpoint and /par accept; --client-auth
# replaces the contents, and every grant shares this one list.
AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
REFRESH_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:refresh_token"
FAULTS = (None, "tampered", "expired", "wrong_audience", "alg_none", "hs256_public_key", "unknown_kid")


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
        return method in AUTH_METHODS

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type in (
            "authorization_code", "refresh_token", DeviceCodeGrant.GRANT_TYPE, "client_credentials", TOKEN_EXCHANGE
        )


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
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

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
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
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


def new_signing_key(alg, kid):
    parameters = {"kid": kid, "use": "sig", "alg": alg}
    if alg == "ES256":
        return ECKey.generate_key("P-256", parameters=parameters)
    return RSAKey.generate_key(2048, parameters=parameters)


def signing_key():
    """The key that signs id tokens now (the last made)."""
    with LOCK:
        return SIGNING["keys"][-1]


def rotate_signing_key():
    with SIGNING_LOCK, LOCK:
        key = new_signing_key(SIGNING["alg"], "k%d" % (len(SIGNING["keys"]) + 1))
        SIGNING["keys"].append(key)
    return key


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_json(value):
    return b64url(json.dumps(value, separators=(",", ":")).encode())


def faulted(id_token):
    """The id token as the fault set by POST /test/id-token-fault spoils it (as it is, with none).
    Applied after signing so the code grant's id token stays the one Authlib made."""
    with LOCK:
        fault = SIGNING["fault"]
    if fault is None:
        return id_token
    head, payload, signature = id_token.split(".")
    if fault == "tampered":
        # The first character carries six whole bits of the signature; the last may be padding.
        return ".".join([head, payload, ("B" if signature[0] == "A" else "A") + signature[1:]])
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    key = signing_key()
    alg = key.get("alg")
    header = {"alg": alg, "kid": key.kid}
    now = int(time.time())
    if fault == "expired":
        claims.update(iat=now - 3900, exp=now - 3600, auth_time=min(claims.get("auth_time", now), now - 3900))
    elif fault == "wrong_audience":
        claims["aud"] = ["someone-else"]
    elif fault == "alg_none":
        return b64url_json({"alg": "none"}) + "." + b64url_json(claims) + "."
    elif fault == "hs256_public_key":
        # Algorithm confusion: a verifier that takes "alg" from the header and the key as bytes.
        signed = b64url_json({"typ": "JWT", "alg": "HS256", "kid": key.kid}) + "." + b64url_json(claims)
        mac = hmac.new(key.as_pem(private=False), signed.encode(), hashlib.sha256).digest()
        return signed + "." + b64url(mac)
    elif fault == "unknown_kid":
        key = new_signing_key(alg, "unlisted-" + secrets.token_hex(4))
        header["kid"] = key.kid
    return jwt.encode(header, claims, key, algorithms=[alg])


class IDToken(OpenIDCode):
    def __init__(self, issuer):
        super().__init__(require_nonce=False)
        self.issuer = issuer

    def exists_nonce(self, nonce, req):
        with LOCK:
            return any(code.get("nonce") == nonce for code in CODES.values())

    def resolve_client_private_key(self, client):
        return signing_key()

    def get_client_algorithm(self, client):
        return SIGNING["alg"]

    def get_encode_header(self, client):
        return {"alg": SIGNING["alg"], "kid": signing_key().kid}

    def get_client_claims(self, client):
        return {"iss": self.issuer, "aud": [client.client_id]}

    def generate_user_info(self, user, scope):
        return UserInfo(sub=user, name="Person One")

    def process_token(self, grant, response):
        with SIGNING_LOCK:
            token = super().process_token(grant, response)
            if "id_token" in token:
                token["id_token"] = faulted(token["id_token"])
        return token


class RefreshIDToken:
    """OpenID Connect Core section 12.2: a refresh answer carries a new id token when the
    token's scope has openid. Authlib's OpenIDCode extends only the code grant, so this hooks
    the refresh grant the same way and builds the token with Authlib's generate_id_token."""

    def __init__(self, issuer):
        self.issuer = issuer

    def __call__(self, grant):
        grant.register_hook("after_create_token_response", self.process_token)

    def process_token(self, grant, response):
        _, token, _ = response
        if not is_openid_scope(token.get("scope")):
            return
        with SIGNING_LOCK:
            key = signing_key()
            id_token = generate_id_token(
                token, UserInfo(sub=USER_ID), key, iss=self.issuer, aud=[grant.client.client_id],
                alg=key.get("alg"), exp=300, auth_time=grant.request.refresh_token.get("auth_time"), kid=key.kid,
            )
            token["id_token"] = faulted(id_token)


class ClientAssertion(JWTBearerClientAssertion):
    """RFC 7523 client authentication, Authlib's, as `private_key_jwt` (keys from
    POST /test/client-jwks) or `client_secret_jwt` (HS256 keyed with the client secret)."""

    def __init__(self, method):
        super().__init__(validate_jti=True)
        self.CLIENT_AUTH_METHOD = method

    def __call__(self, query_client, req):
        client = super().__call__(query_client, req)
        # RFC 7523 section 3: a client_id sent beside the assertion names the same client.
        claimed = req.form.get("client_id")
        if client and claimed and claimed != client.client_id:
            raise InvalidClientError(description="client_id is not the assertion's subject")
        return client

    def get_audiences(self):
        audiences = [ISSUER[0] + "/token", ISSUER[0]]
        if request.path == "/par":
            audiences.append(ISSUER[0] + "/par")  # RFC 9126 section 2: its own URL too
        return audiences

    def validate_jti(self, claims, jti):
        with LOCK:
            if (claims["sub"], jti) in USED_JTIS:
                return False
            USED_JTIS.add((claims["sub"], jti))
            return True

    def resolve_client_public_key(self, client):
        if self.CLIENT_AUTH_METHOD == "client_secret_jwt":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # joserfc warns that a short test secret is short
                return OctKey.import_key(client.client_secret)
        with LOCK:
            keys = TEST["client_jwks"]
        if keys is None:
            raise InvalidClientError(description="no public keys registered for the client")
        return keys


def record_client_auth(sender, client=None, grant=None, **kwargs):
    """Authlib's client_authenticated signal, sent once per token request."""
    with LOCK:
        CLIENT_AUTHS.append(grant.request.auth_method)


class Issuer(IssuerParameter):
    def __init__(self, issuer):
        self.issuer = issuer

    def get_issuer(self):
        return self.issuer


class DeviceEndpoint(DeviceAuthorizationEndpoint):
    CLIENT_AUTH_METHODS = AUTH_METHODS
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
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
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


class ClientCredentials(grants.ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    DELAY = 0.0

    def generate_token(self, **kwargs):
        # Authlib's generator refuses a missing scope; RFC 6749 section 4.4.2 makes it optional.
        kwargs["scope"] = kwargs.get("scope") or ""
        return super().generate_token(**kwargs)

    def create_token_response(self):
        response = super().create_token_response()
        form = self.request.form
        with LOCK:
            CLIENT_CREDENTIALS.append(
                {"scope": form.get("scope"), "resource": form.getlist("resource"), "audience": form.get("audience"),
                 "at": time.time()}
            )
        # Held after the token is made, so overlapping renewals each get one.
        time.sleep(self.DELAY)
        return response


class InvalidTargetError(OAuth2Error):
    """RFC 8707 section 2 / RFC 8693 section 2.2.2 (Authlib has no class for it)."""

    error = "invalid_target"


def exchange_subject(subject_token, token_type, client):
    """The grant behind a subject token this server issued and still honours, or None."""
    with LOCK:
        if token_type == ACCESS_TOKEN_TYPE:
            found = ACCESS_TOKENS.get(subject_token)
            if found and found["expires_at"] > time.time() and found["client_id"] == client.client_id:
                return found
        else:
            found = TOKENS.get(subject_token)
            if found and not found.is_revoked() and found.check_client(client):
                return {"scope": found.get_scope(), "user": USER_ID}
    return None


class TokenExchangeGrant(grants.BaseGrant, grants.TokenEndpointMixin):
    """RFC 8693 token exchange, issuing access tokens only (Authlib has no grant for it)."""

    GRANT_TYPE = TOKEN_EXCHANGE
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    AUDIENCES = ()
    LIFETIME = 3600

    def validate_token_request(self):
        client = self.authenticate_token_endpoint_client()
        if not client.check_grant_type(self.GRANT_TYPE):
            raise UnauthorizedClientError("The client may not exchange tokens")
        self.request.client = client
        form = self.request.form
        subject_token, token_type = form.get("subject_token"), form.get("subject_token_type")
        if not subject_token or not token_type:
            raise InvalidRequestError("subject_token and subject_token_type are required")
        if token_type not in (ACCESS_TOKEN_TYPE, REFRESH_TOKEN_TYPE):
            raise InvalidRequestError("unsupported subject_token_type")
        if form.get("requested_token_type") not in (None, ACCESS_TOKEN_TYPE):
            raise InvalidRequestError("only access tokens are issued")
        if form.get("actor_token") and not form.get("actor_token_type"):
            raise InvalidRequestError("actor_token without actor_token_type")
        subject = exchange_subject(subject_token, token_type, client)
        if subject is None:
            raise InvalidGrantError("unknown, expired or revoked subject_token")
        for audience in form.getlist("audience"):
            if audience not in self.AUDIENCES:
                raise InvalidTargetError("audience %r is not served here" % audience)
        scope = form.get("scope")
        if scope and not set(scope_to_list(scope)) <= set(scope_to_list(subject["scope"]) or []):
            raise InvalidScopeError()
        self.request.credential = subject

    def create_token_response(self):
        form = self.request.form
        subject = self.request.credential
        token = self.generate_token(
            user=subject.get("user"), scope=form.get("scope") or subject["scope"] or "",
            expires_in=self.LIFETIME, include_refresh_token=False,
        )
        token["issued_token_type"] = ACCESS_TOKEN_TYPE
        self.save_token(token)
        with LOCK:
            EXCHANGES.append({
                "audience": form.getlist("audience"), "resource": form.getlist("resource"),
                "scope": form.get("scope"), "subject_token_type": form.get("subject_token_type"),
            })
        return 200, token, self.TOKEN_RESPONSE_HEADER


ISSUER = [""]


def save_token(token, req):
    now = time.time()
    # When the person signed in: the code's time, carried over by every refresh.
    if req.authorization_code:
        auth_time = req.authorization_code.get_auth_time()
    elif req.refresh_token:
        auth_time = req.refresh_token.get("auth_time")
    else:
        auth_time = int(now)
    with LOCK:
        # Every access token, so token exchange can tell a live one.
        ACCESS_TOKENS[token["access_token"]] = {
            "client_id": req.client.client_id, "scope": token.get("scope", ""), "user": req.user,
            "expires_at": now + token.get("expires_in", 0),
        }
        if "refresh_token" in token:
            TOKENS[token["refresh_token"]] = Token(
                token, client_id=req.client.client_id, scope=token.get("scope", ""), auth_time=auth_time
            )


def build_metadata(args, issuer):
    metadata = {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
        "jwks_uri": issuer + "/jwks",
        "response_types_supported": ["code"],
        "device_authorization_endpoint": issuer + "/device_authorization",
        "grant_types_supported": [
            "authorization_code", "refresh_token", DeviceCodeGrant.GRANT_TYPE, "client_credentials", TOKEN_EXCHANGE
        ],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "authorization_response_iss_parameter_supported": True,
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        "scopes_supported": ["openid", "profile", "offline_access"],
    }
    if args.client_auth == "private_key_jwt":
        metadata["token_endpoint_auth_signing_alg_values_supported"] = ["ES256", "RS256"]
    elif args.client_auth == "client_secret_jwt":
        metadata["token_endpoint_auth_signing_alg_values_supported"] = ["HS256"]
    if args.par:
        metadata["pushed_authorization_request_endpoint"] = issuer + "/par"
        metadata["require_pushed_authorization_requests"] = True
    return metadata


def json_body():
    """A test hook's JSON object body, or None."""
    body = request.get_json(force=True, silent=True)
    return body if isinstance(body, dict) else None


def public_key_set(body):
    """The client's public keys from a JWKS, or None if it is not one of RSA and EC keys."""
    try:
        keys = KeySet.import_key_set(body)
    except (JoseError, ValueError, TypeError, KeyError):
        return None
    if not keys.keys or any(key.key_type not in ("RSA", "EC") for key in keys):
        return None
    return KeySet.import_key_set(keys.as_dict(private=False))


def build(args, issuer):
    global CLIENT
    CLIENT = Client(args.client_id, args.client_secret, args.redirect_uri)
    SIGNING["alg"] = args.id_token_alg
    SIGNING["keys"] = [new_signing_key(args.id_token_alg, "k1")]
    app = Flask(__name__)
    app.config["OAUTH2_ACCESS_TOKEN_GENERATOR"] = True
    app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
    app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {
        "authorization_code": args.lifetime, "refresh_token": args.lifetime, "client_credentials": args.lifetime,
    }
    server = AuthorizationServer(app, query_client=lambda cid: CLIENT if cid == CLIENT.client_id else None,
                                 save_token=save_token)
    if args.client_auth != "client_secret":
        AUTH_METHODS[:] = [args.client_auth]
        server.register_client_auth_method(args.client_auth, ClientAssertion(args.client_auth))
    client_authenticated.connect(record_client_auth)
    server.register_grant(CodeGrant, [CodeChallenge(required=True), IDToken(issuer)])
    server.register_grant(RotatingRefreshGrant, [RefreshIDToken(issuer)])
    DeviceGrant.SLOW_DOWN = args.slow_down
    DeviceEndpoint.INTERVAL = args.device_interval
    DeviceGrant.TOKEN_DELAY = args.device_token_delay
    server.register_grant(DeviceGrant)
    server.register_endpoint(DeviceEndpoint)
    ClientCredentials.DELAY = args.client_credentials_delay
    server.register_grant(ClientCredentials)
    TokenExchangeGrant.AUDIENCES = tuple(args.exchange_audience)
    TokenExchangeGrant.LIFETIME = args.lifetime
    server.register_grant(TokenExchangeGrant)
    ISSUER[0] = issuer
    server.register_extension(Issuer(issuer))
    metadata = build_metadata(args, issuer)

    @app.get("/.well-known/oauth-authorization-server")
    @app.get("/.well-known/openid-configuration")
    def discovery():
        with LOCK:
            named = TEST["metadata_issuer"]
            down = TEST["metadata_down"]
        if down:
            return jsonify(error="temporarily_unavailable"), 503
        return jsonify(metadata if named is None else dict(metadata, issuer=named))

    @app.get("/jwks")
    def jwks():
        with LOCK:
            if request.method == "GET":
                TEST["jwks_fetches"] += 1
            keys = list(SIGNING["keys"])
        return jsonify({"keys": [key.as_dict(private=False) for key in keys]})

    @app.post("/par")
    def par():
        # RFC 9126 section 2: the client authenticates as at the token endpoint.
        client = server.authenticate_client(server.create_oauth2_request(request), AUTH_METHODS, "token")
        credentials = ("client_secret", "client_assertion", "client_assertion_type")
        params = {k: v for k, v in request.form.items(multi=True) if k not in credentials}
        if "request_uri" in params:
            return jsonify(error="invalid_request", error_description="request_uri in a pushed request"), 400
        params["client_id"] = client.client_id
        request_uri = "urn:ietf:params:oauth:request_uri:" + secrets.token_urlsafe(24)
        with LOCK:
            PUSHED[request_uri] = (params, time.time() + 60)
        return jsonify(request_uri=request_uri, expires_in=60), 201

    @app.errorhandler(OAuth2Error)
    def oauth2_error(error):
        # /par lets a refused client authentication through (the grants answer theirs themselves).
        return server.handle_error_response(None, error)

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

    @app.post("/test/rotate-signing-key")
    def rotate_key():
        return jsonify(kid=rotate_signing_key().kid)

    @app.get("/test/jwks-fetches")
    def jwks_fetches():
        with LOCK:
            return jsonify(count=TEST["jwks_fetches"])

    @app.post("/test/id-token-fault")
    def id_token_fault():
        body = json_body()
        if body is None or body.get("fault") not in FAULTS:
            return jsonify(error="fault must be one of %s" % list(FAULTS)), 400
        with LOCK:
            SIGNING["fault"] = body["fault"]
        return jsonify(fault=body["fault"])

    @app.post("/test/metadata-issuer")
    def metadata_issuer():
        body = json_body()
        if body is None or not isinstance(body.get("issuer"), (str, type(None))):
            return jsonify(error='expected {"issuer": string or null}'), 400
        with LOCK:
            TEST["metadata_issuer"] = body["issuer"]
        return jsonify(issuer=body["issuer"] if body["issuer"] is not None else issuer)

    @app.post("/test/metadata-down")
    def metadata_down():
        body = json_body()
        if body is None or not isinstance(body.get("down"), bool):
            return jsonify(error='expected {"down": true or false}'), 400
        with LOCK:
            TEST["metadata_down"] = body["down"]
        return jsonify(down=body["down"])

    @app.post("/test/client-secret")
    def client_secret():
        body = json_body()
        if body is None or not isinstance(body.get("secret"), str) or not body["secret"]:
            return jsonify(error="expected {\"secret\": S}"), 400
        with LOCK:
            CLIENT.client_secret = body["secret"]
        return jsonify(ok=True)

    @app.post("/test/client-jwks")
    def client_jwks():
        keys = public_key_set(json_body())
        if keys is None:
            return jsonify(error='expected {"keys": [...]} of RSA or EC keys'), 400
        with LOCK:
            TEST["client_jwks"] = keys
        return jsonify(kids=[key.kid for key in keys])

    @app.get("/test/client-auth")
    def client_auths():
        with LOCK:
            return jsonify(methods=CLIENT_AUTHS)

    @app.get("/test/client-credentials")
    def client_credentials():
        with LOCK:
            return jsonify(issued=len(CLIENT_CREDENTIALS), requests=CLIENT_CREDENTIALS)

    @app.get("/test/exchanges")
    def exchanges():
        with LOCK:
            return jsonify(count=len(EXCHANGES), requests=EXCHANGES)

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
    parser.add_argument("--id-token-alg", choices=["RS256", "ES256"], default="RS256",
                        help="the key type that signs id tokens")
    parser.add_argument("--client-auth", choices=["client_secret", "private_key_jwt", "client_secret_jwt"],
                        default="client_secret", help="the one way the client authenticates")
    parser.add_argument("--client-credentials-delay", type=float, default=0.0,
                        help="seconds to hold each client credentials answer")
    parser.add_argument("--exchange-audience", action="append", default=[],
                        help="an audience token exchange may ask for (repeatable)")
    args = parser.parse_args()
    if not args.redirect_uri:
        args.redirect_uri = ["http://127.0.0.1/callback"]
    if not args.exchange_audience:
        args.exchange_audience = ["api.example", "reports.example"]
    # Bound first, so the issuer names the real port.
    holder = {}
    http = make_server(args.host, args.port, lambda e, s: holder["app"](e, s), threaded=True)
    issuer = "http://%s:%d" % (args.host, http.server_port)
    holder["app"] = build(args, issuer)
    print(json.dumps({"issuer": issuer}), flush=True)
    http.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
