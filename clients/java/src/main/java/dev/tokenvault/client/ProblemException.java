package dev.tokenvault.client;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * A problem the daemon answered with, one subclass per HTTP status ({@link BadRequestException},
 * {@link ConflictException}, …) so a caller can catch a family, and {@link #code()} for the exact
 * reason. A code is always thrown as the class of the status the API documents for it, whatever
 * status a proxy in between might have turned it into ({@link #CODES}); a code this version does
 * not know is thrown as the class of its status, or as this class for a status without one.
 */
public class ProblemException extends TokenVaultException {
    private static final long serialVersionUID = 1L;

    /**
     * Every code the API sends (docs/openapi.yaml, {@code Problem}) with the HTTP status it comes
     * with, and so the exception class it is thrown as.
     */
    public static final Map<String, Integer> CODES = codes();

    private static final Map<Integer, Function<Problem, ProblemException>> BY_STATUS = Map.ofEntries(
            Map.entry(BadRequestException.STATUS, BadRequestException::new),
            Map.entry(ForbiddenException.STATUS, ForbiddenException::new),
            Map.entry(NotFoundException.STATUS, NotFoundException::new),
            Map.entry(MethodNotAllowedException.STATUS, MethodNotAllowedException::new),
            Map.entry(ConflictException.STATUS, ConflictException::new),
            Map.entry(PayloadTooLargeException.STATUS, PayloadTooLargeException::new),
            Map.entry(UnsupportedMediaTypeException.STATUS, UnsupportedMediaTypeException::new),
            Map.entry(UnprocessableException.STATUS, UnprocessableException::new),
            Map.entry(TooManyRequestsException.STATUS, TooManyRequestsException::new),
            Map.entry(InternalErrorException.STATUS, InternalErrorException::new),
            Map.entry(BadGatewayException.STATUS, BadGatewayException::new),
            Map.entry(UnavailableException.STATUS, UnavailableException::new),
            Map.entry(GatewayTimeoutException.STATUS, GatewayTimeoutException::new));

    private final Problem problem;

    public ProblemException(Problem problem) {
        super(message(problem), null);
        this.problem = problem;
    }

    /** The problem document as the daemon sent it. */
    public Problem problem() {
        return problem;
    }

    /** The HTTP status of the answer. */
    public int status() {
        return problem.status();
    }

    /** The stable, machine-readable code ({@code credential_not_found}, {@code needs_reauth}, …). */
    public String code() {
        return problem.code();
    }

    public String title() {
        return problem.title();
    }

    /** What happened, for people; never a secret. */
    public String detail() {
        return problem.detail();
    }

    /** For a 400, the offending body path or query parameter; otherwise {@code null}. */
    public String field() {
        return problem.field();
    }

    /** For a 403, the permission the caller lacks; otherwise {@code null}. */
    public String permission() {
        return problem.permission();
    }

    /** {@code urn:tokenvault:request:<X-Request-Id>}: the daemon's log lines of the request carry the same id. */
    public String instance() {
        return problem.instance();
    }

    /** The exception for {@code problem}: the class of its code, else of its status, else this class. */
    public static ProblemException of(Problem problem) {
        Integer status = CODES.get(problem.code());
        Function<Problem, ProblemException> make = BY_STATUS.get(status != null ? status : problem.status());
        return make != null ? make.apply(problem) : new ProblemException(problem);
    }

    /**
     * The exception for an answer with a status other than the one asked for: its problem document
     * when it has one, otherwise code {@code http_<status>} with the start of the body as the detail
     * (quoted only from an error status: a success's body may hold a token).
     */
    public static ProblemException fromAnswer(int status, String contentType, byte[] body) {
        if (contentType != null && contentType.contains("json")) {
            try {
                Object parsed = Json.parse(body);
                if (parsed instanceof Map && ((Map<?, ?>) parsed).get("code") instanceof String) {
                    Map<?, ?> document = (Map<?, ?>) parsed;
                    return of(new Problem(status, (String) document.get("code"), text(document, "title"),
                            text(document, "detail"), text(document, "field"), text(document, "permission"),
                            text(document, "instance")));
                }
            } catch (Json.MalformedException notJson) {
                // Quoted below like any other body.
            }
        }
        String detail = status >= 400
                ? new String(Arrays.copyOf(body, Math.min(body.length, 200)), StandardCharsets.UTF_8)
                : null;
        return of(new Problem(status, "http_" + status, null, detail, null, null, null));
    }

    private static String text(Map<?, ?> document, String name) {
        Object value = document.get(name);
        return value instanceof String ? (String) value : null;
    }

    private static String message(Problem problem) {
        String text = firstNonEmpty(problem.detail(), problem.title(), problem.code());
        StringBuilder message = new StringBuilder(text).append(" (").append(problem.status()).append(' ')
                .append(problem.code());
        if (problem.field() != null && !problem.field().isEmpty()) {
            message.append(", field ").append(problem.field());
        }
        if (problem.permission() != null && !problem.permission().isEmpty()) {
            message.append(", needs ").append(problem.permission());
        }
        if (problem.instance() != null && !problem.instance().isEmpty()) {
            message.append(", ").append(problem.instance());
        }
        return message.append(')').toString();
    }

    private static String firstNonEmpty(String... texts) {
        for (String text : texts) {
            if (text != null && !text.isEmpty()) {
                return text;
            }
        }
        return "";
    }

    private static Map<String, Integer> codes() {
        Map<String, Integer> codes = new LinkedHashMap<>();
        put(codes, BadRequestException.STATUS,
                "invalid_field", "invalid_payload", "invalid_credential_id", "invalid_request", "invalid_callback");
        put(codes, ForbiddenException.STATUS, "forbidden");
        put(codes, NotFoundException.STATUS, "credential_not_found", "not_found", "authorization_unknown");
        put(codes, MethodNotAllowedException.STATUS, "method_not_allowed");
        put(codes, ConflictException.STATUS, "token_expired", "min_ttl_unreachable", "needs_reauth", "revoke_pending",
                "not_refreshable", "conflict", "authorization_expired", "authorization_mismatch");
        put(codes, PayloadTooLargeException.STATUS, "payload_too_large");
        put(codes, UnsupportedMediaTypeException.STATUS, "unsupported_media_type");
        put(codes, UnprocessableException.STATUS, "unknown_provider", "provider_not_configured", "provider_rejected",
                "nonce_mismatch", "audience_mismatch", "id_token_expired", "id_token_invalid", "upstream_not_allowed",
                "authorization_denied", "issuer_mismatch", "redirect_uri_not_allowed");
        put(codes, TooManyRequestsException.STATUS,
                "rate_limited", "too_many_streams", "too_many_proxy_calls", "too_many_authorizations");
        put(codes, InternalErrorException.STATUS, "internal_error", "integrity_error", "crypto_error",
                "unknown_key_term", "storage_error", "wrong_master_key", "key_source_error", "migration_error");
        put(codes, BadGatewayException.STATUS, "provider_unavailable", "upstream_unavailable", "upstream_too_large");
        put(codes, UnavailableException.STATUS, "storage_unavailable", "commit_pending", "engine_unavailable",
                "too_many_connections", "clock_skew");
        put(codes, GatewayTimeoutException.STATUS, "upstream_timeout");
        return Collections.unmodifiableMap(codes);
    }

    private static void put(Map<String, Integer> codes, int status, String... names) {
        for (String name : names) {
            codes.put(name, status);
        }
    }
}
