package dev.tokenvault.client;

import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.function.Function;

/**
 * A client of the TokenVault daemon's local API over its Unix socket, one method per route
 * (docs/openapi.yaml). The daemon decides what a caller may do by the uid and groups of its
 * process, so the client has no credentials of its own. Ids are {@code namespace/name}.
 *
 * <p>Thread-safe: nothing is kept between calls (each opens its own connection). The daemon's
 * problems are thrown as {@link ProblemException} subclasses with the stable {@code code()}; a
 * socket that cannot be reached as {@link ConnectionFailedException}.
 */
public final class TokenVaultClient {
    /** How long a connect, write or read may wait by default. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    /** How long the daemon may take to reach a provider (refresh, exchange, sign-in): 60 s, as in the other clients. */
    private static final Duration PROVIDER_TIMEOUT = Duration.ofSeconds(60);

    private static final Set<Integer> OK = Set.of(200);
    private static final Set<Integer> OK_OR_CREATED = Set.of(200, 201);

    private final Transport transport;

    /** A client of the daemon on {@link DefaultSocket#path()}. */
    public TokenVaultClient() {
        this(null, DEFAULT_TIMEOUT);
    }

    /** A client of the daemon on {@code socketPath} ({@code null} or empty: {@link DefaultSocket#path()}). */
    public TokenVaultClient(String socketPath) {
        this(socketPath, DEFAULT_TIMEOUT);
    }

    /**
     * A client of the daemon on {@code socketPath} ({@code null} or empty: {@link DefaultSocket#path()});
     * {@code timeout} bounds each connect, write and read of a request (a stream's only until its
     * answer's head: a stream then waits as long as the daemon is quiet).
     */
    public TokenVaultClient(String socketPath, Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("the timeout must be positive");
        }
        this.transport = new Transport(
                socketPath != null && !socketPath.isEmpty() ? socketPath : DefaultSocket.path(), timeout);
    }

    /** The socket this client talks to. */
    public String socketPath() {
        return transport.socketPath;
    }

    /** {@code GET /v1/health}: {@code status} ({@code ok} or {@code degraded}), the database, providers and courier. */
    public Map<String, Object> health() {
        return transport.send("GET", "/v1/health", Map.of(), null, OK).decode(Document::raw);
    }

    /**
     * Stores or replaces a credential. {@code tokenJson}: the token response exactly as the
     * provider or SDK gave it, a JSON object as text, passed on untouched so the daemon seals every
     * field (and names the field at fault when one is wrong). It is parsed first, so that text that
     * is not one JSON object (which could add members around the token) is refused before anything
     * is sent.
     *
     * @param labels the credential's labels ({@code null}: none)
     * @throws IllegalArgumentException {@code tokenJson} is not one JSON object
     */
    public Stored put(String credentialId, String provider, String tokenJson, Map<String, String> labels) {
        String path = Transport.credentialPath(credentialId, "");
        String token = tokenJson == null ? "" : tokenJson.strip();
        Object parsed;
        try {
            parsed = Json.parse(token);
        } catch (Json.MalformedException error) {
            parsed = null;
        }
        if (!(parsed instanceof Map)) {
            throw new IllegalArgumentException(
                    "the token must be a JSON object (the token response as the provider or SDK gave it)");
        }
        Map<String, Object> head = new LinkedHashMap<>();
        head.put("provider", provider);
        head.put("labels", labels == null ? Map.of() : labels);
        String document = Json.write(head);
        byte[] body = (document.substring(0, document.length() - 1) + ",\"token\":" + token + "}")
                .getBytes(StandardCharsets.UTF_8);
        Transport.Reply reply = transport.send("PUT", path, Map.of(), body, OK_OR_CREATED);
        return new Stored(reply.decode(Credential::from), reply.status() == 201);
    }

    /** {@link #put(String, String, String, Map)} without labels. */
    public Stored put(String credentialId, String provider, String tokenJson) {
        return put(credentialId, provider, tokenJson, null);
    }

    /** {@link #put(String, String, String, Map)} with the token response as a map (written as JSON). */
    public Stored put(String credentialId, String provider, Map<String, ?> token, Map<String, String> labels) {
        return put(credentialId, provider, Json.write(token), labels);
    }

    /** The credential's metadata; never a secret. */
    public Credential show(String credentialId) {
        return transport.send("GET", Transport.credentialPath(credentialId, ""), Map.of(), null, OK)
                .decode(Credential::from);
    }

    /** The current access token. */
    public Token token(String credentialId) {
        return token(credentialId, null);
    }

    /**
     * The current access token, valid for at least {@code minTtl} more ({@code null}, zero or
     * negative: any, as in the Go client): the daemon refreshes first when it would not be, or
     * answers {@link ConflictException} ({@code token_expired}, {@code min_ttl_unreachable}).
     */
    public Token token(String credentialId, Duration minTtl) {
        Map<String, String> query = new LinkedHashMap<>();
        query.put("min_ttl", minTtl == null || minTtl.isNegative() || minTtl.isZero() ? null : seconds(minTtl));
        return transport.send("GET", Transport.credentialPath(credentialId, "/token"), query, null, OK)
                .decode(Token::from);
    }

    /**
     * A token derived from the credential's by RFC 8693 token exchange at its provider: for
     * another audience or resource, narrower scopes, or another token type, so a service can
     * hand a downstream API a token meant for it alone instead of the credential's own, which
     * never leaves the daemon. The subject is always the stored access token: the refresh token
     * never leaves the vault for an exchange. The daemon answers the same request (lists in any
     * order) from memory while the derived token lives, and leaves the credential as it is: the
     * provider's refusal ({@code invalid_target}, {@code invalid_scope}) is an
     * {@link UnprocessableException} with code {@code provider_rejected} and the OAuth error in
     * {@code detail()}.
     *
     * @param options what to ask for: at least one audience, resource or scope ({@code null}:
     *     {@link TokenExchangeOptions#defaults()}, which the daemon refuses)
     * @return the derived token, with {@link Token#issuedTokenType()} and {@link Token#scopes()}
     */
    public Token exchangeToken(String credentialId, TokenExchangeOptions options) {
        TokenExchangeOptions asked = options == null ? TokenExchangeOptions.defaults() : options;
        return transport.send("POST", Transport.credentialPath(credentialId, "/token-exchange"), Map.of(),
                json(asked.toJson()), OK, PROVIDER_TIMEOUT).decode(Token::from);
    }

    /** The first page of every credential's metadata, ordered by id. */
    public Page<Credential> list() {
        return list(ListOptions.all());
    }

    /** One page of metadata, ordered by id. */
    public Page<Credential> list(ListOptions options) {
        Map<String, String> query = new LinkedHashMap<>();
        query.put("namespace", options.namespace());
        query.put("status", options.status());
        query.put("cursor", options.cursor());
        query.put("limit", options.limit() == null ? null : options.limit().toString());
        return transport.send("GET", "/v1/credentials", query, null, OK)
                .decode(document -> page(document, Credential::from));
    }

    /**
     * Every matching credential ({@code null}: no filter), fetched page by page (500 per request)
     * as the iteration goes; each {@code iterator()} starts again from the first page.
     */
    public Iterable<Credential> listAll(String namespace, String status) {
        return () -> new Pages<>(cursor -> list(new ListOptions(namespace, status, cursor, 500)));
    }

    /** Every credential, page by page. */
    public Iterable<Credential> listAll() {
        return listAll(null, null);
    }

    /** Revokes the tokens at the provider (when it has a revocation endpoint), then deletes. */
    public Deleted delete(String credentialId) {
        return delete(credentialId, false);
    }

    /**
     * Revokes the tokens at the provider (when it has a revocation endpoint), then deletes.
     * {@code force}: delete even when revocation fails.
     */
    public Deleted delete(String credentialId, boolean force) {
        Map<String, String> query = new LinkedHashMap<>();
        query.put("force", force ? "true" : null);
        Transport.Reply reply = transport.send("DELETE", Transport.credentialPath(credentialId, ""), query, null,
                Set.of(202, 204));
        if (reply.status() == 202) {
            return new Deleted(true, null, reply.decode(Credential::from));
        }
        String revoked = reply.header("TokenVault-Revoked");
        return new Deleted(false, revoked == null ? null : revoked.equals("true"), null);
    }

    /** Refreshes now (at most once per credential every {@code limits.on_demand_refresh_seconds}). */
    public Credential refresh(String credentialId) {
        return transport.send("POST", Transport.credentialPath(credentialId, "/refresh"), Map.of(), null, OK,
                PROVIDER_TIMEOUT).decode(Credential::from);
    }

    /**
     * Has the daemon redeem a one-time code with its PKCE verifier at a provider instance, check
     * the id token and store the result. Answers the access token, never the refresh token.
     */
    public Exchanged exchange(String credentialId, ExchangeRequest request) {
        Transport.Reply reply = transport.send("POST", Transport.credentialPath(credentialId, "/exchange"), Map.of(),
                json(request.toJson()), OK_OR_CREATED, PROVIDER_TIMEOUT);
        return reply.decode(document -> Exchanged.from(document, reply.status() == 201));
    }

    /**
     * Has the daemon start a sign-in at a provider instance that finishes into
     * {@code credentialId}: it makes and keeps the state, PKCE verifier and nonce, and answers the
     * authorization URL (or the request's parameters, or a device sign-in's user code).
     */
    public SignIn startSignIn(String credentialId, SignInRequest request) {
        return transport.send("POST", Transport.credentialPath(credentialId, "/authorization"), Map.of(),
                json(request.toJson()), Set.of(201), PROVIDER_TIMEOUT).decode(SignIn::from);
    }

    /** The caller's device sign-ins waiting for {@code credentialId}, and how their last sign-in into it ended. */
    public SignInStatus signInStatus(String credentialId) {
        return transport.send("GET", Transport.credentialPath(credentialId, "/authorization"), Map.of(), null, OK)
                .decode(SignInStatus::from);
    }

    /**
     * Finishes the sign-in the callback's {@code state} names with the whole URL the
     * authorization server redirected to: the daemon redeems the code and stores (or repairs) the
     * credential. Answers its metadata (never a token) and whether it was created.
     */
    public SignedIn finishSignIn(String credentialId, String callbackUrl) {
        Transport.Reply reply = transport.send("POST",
                Transport.credentialPath(credentialId, "/authorization/callback"), Map.of(),
                json(Map.of("callback_url", callbackUrl)), OK_OR_CREATED, PROVIDER_TIMEOUT);
        return new SignedIn(reply.decode(Credential::from), reply.status() == 201);
    }

    /**
     * The credential's metadata now, then again on every change, until it is deleted or the daemon
     * stops (the stream then ends). Close the stream to stop watching.
     */
    public ChangeStream<Credential> watch(String credentialId) {
        return transport.stream(Transport.credentialPath(credentialId, "/watch"), Credential::from);
    }

    /** Every change to the credentials the caller may list, from now on, until the daemon stops. */
    public ChangeStream<Event> events() {
        return transport.stream("/v1/events", Event::from);
    }

    /** The credentials this process may use through the proxy, and their upstream bases, page by page. */
    public Iterable<UsableCredential> usableCredentials(String namespace) {
        return () -> new Pages<>(cursor -> {
            Map<String, String> query = new LinkedHashMap<>();
            query.put("namespace", namespace);
            query.put("cursor", cursor);
            query.put("limit", "500");
            return transport.send("GET", "/v1/proxy/credentials", query, null, OK)
                    .decode(document -> page(document, UsableCredential::from));
        });
    }

    /** {@link #usableCredentials(String)} in every namespace. */
    public Iterable<UsableCredential> usableCredentials() {
        return usableCredentials(null);
    }

    /** {@link #call(String, String, String, CallOptions)} without headers or body. */
    public UpstreamResponse call(String credentialId, String method, String target) {
        return call(credentialId, method, target, CallOptions.defaults());
    }

    /** {@link #call(String, String, String, CallOptions)} with headers ({@code null}: none) and no body. */
    public UpstreamResponse call(String credentialId, String method, String target, Map<String, String> headers) {
        return call(credentialId, method, target, options(headers));
    }

    /** {@link #call(String, String, String, CallOptions)} with headers and a body of known length ({@code null}: none). */
    public UpstreamResponse call(String credentialId, String method, String target, Map<String, String> headers,
            byte[] body) {
        CallOptions options = options(headers);
        return call(credentialId, method, target, body == null ? options : options.withBody(body));
    }

    /** {@link #call(String, String, String, CallOptions)} with headers and a body sent chunked as it is read ({@code null}: none). */
    public UpstreamResponse call(String credentialId, String method, String target, Map<String, String> headers,
            InputStream body) {
        CallOptions options = options(headers);
        return call(credentialId, method, target, body == null ? options : options.withBody(body));
    }

    /**
     * Sends {@code method target} through the daemon's proxy with the credential's token attached;
     * this process never sees the token ({@code credential:use} is enough). The upstream's answer
     * is returned whatever its status; the daemon's own refusals ({@code upstream_not_allowed},
     * {@code too_many_proxy_calls}, an unreachable upstream) are thrown.
     *
     * @param target a URL inside the provider instance's {@code api_base_urls}, or a path
     *     ({@code /v1/x?y=1}) under the first of them; an error about it shows it without its query
     * @param options the headers, sent on as the daemon's allowlist lets them ({@code Authorization}
     *     never is; a name may repeat), the body, and how long each connect, write and read of the
     *     answer may wait (120 s unless told)
     */
    public UpstreamResponse call(String credentialId, String method, String target, CallOptions options) {
        if (target == null) {
            throw new IllegalArgumentException("the target is a URL or a path starting with /, not null");
        }
        boolean absolute = !target.startsWith("/") && target.contains("://");
        if (!absolute && !target.startsWith("/")) {
            // The query is left out: it may carry a key.
            throw new IllegalArgumentException("'" + Transport.abbreviate(Transport.pathOf(target))
                    + "' is neither a URL nor a path starting with /");
        }
        String path = Transport.credentialPath(credentialId, absolute ? "/proxy" : "/proxy" + target);
        List<Map.Entry<String, String>> sent = new ArrayList<>(options.headers());
        if (absolute) {
            sent.removeIf(header -> "TokenVault-Upstream-URL".equalsIgnoreCase(header.getKey()));
            sent.add(Map.entry("TokenVault-Upstream-URL", target));
        }
        Answer answer = transport.open(method.toUpperCase(Locale.ROOT), path, sent, options.body(), options.timeout());
        String marker = answer.header("TokenVault-Proxy");
        if (marker == null || !marker.startsWith("upstream")) {
            throw Transport.refuse(answer);
        }
        return new UpstreamResponse(answer, marker.contains("refreshed"), transport.socketPath);
    }

    private static CallOptions options(Map<String, String> headers) {
        CallOptions options = CallOptions.defaults();
        if (headers != null) {
            for (Map.Entry<String, String> header : headers.entrySet()) {
                options = options.withHeader(header.getKey(), header.getValue());
            }
        }
        return options;
    }

    private static byte[] json(Map<String, ?> document) {
        return Json.write(document).getBytes(StandardCharsets.UTF_8);
    }

    /** Seconds as the daemon reads them: {@code 60}, {@code 1.5}. */
    static String seconds(Duration duration) {
        BigDecimal seconds = BigDecimal.valueOf(duration.getSeconds()).add(BigDecimal.valueOf(duration.getNano(), 9));
        return seconds.stripTrailingZeros().toPlainString();
    }

    private static <T> Page<T> page(Document document, Function<Document, T> build) {
        List<T> items = new ArrayList<>();
        for (Object item : document.list("items")) {
            items.add(build.apply(Document.of(item)));
        }
        return new Page<>(items, document.optionalString("next_cursor"));
    }

    /**
     * Every item of a paged listing: {@code page} is asked for the page after each cursor
     * ({@code null}: the first) until there is none. A daemon repeating a cursor would otherwise
     * keep the caller here for ever.
     */
    private static final class Pages<T> implements Iterator<T> {
        private final Function<String, Page<T>> page;
        private final Set<String> seen = new HashSet<>();
        private Iterator<T> items = List.<T>of().iterator();
        private String cursor;
        private boolean last;

        Pages(Function<String, Page<T>> page) {
            this.page = page;
        }

        @Override
        public boolean hasNext() {
            while (!items.hasNext() && !last) {
                if (cursor != null && !seen.add(cursor)) {
                    throw new UnexpectedResponseException(200, "the daemon returned the same list cursor twice");
                }
                Page<T> current = page.apply(cursor);
                items = current.items().iterator();
                cursor = current.nextCursor();
                last = cursor == null;
            }
            return items.hasNext();
        }

        @Override
        public T next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return items.next();
        }
    }
}
