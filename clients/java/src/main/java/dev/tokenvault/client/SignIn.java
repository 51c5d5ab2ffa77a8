package dev.tokenvault.client;

import java.util.Map;

/**
 * A started sign-in ({@code POST …/authorization}): the URL to send the person to (mode
 * {@code url}), or the request's parameters for a mobile SDK (mode {@code parameters}; a name given
 * twice, such as {@code resource}, as a list), or the code the person enters at
 * {@link #verificationUri()} while the daemon polls (mode {@code device}); and when it ends.
 * Members of another mode are {@code null}.
 *
 * @param pushed the request went to the provider by PAR (RFC 9126) and the URL carries only its reference
 * @param interval seconds between the daemon's polls (mode {@code device})
 */
public record SignIn(
        String authorizationUrl,
        Map<String, Object> parameters,
        String expiresAt,
        boolean pushed,
        String userCode,
        String verificationUri,
        String verificationUriComplete,
        Long interval) {

    static SignIn from(Document document) {
        return new SignIn(document.optionalString("authorization_url"), document.optionalObject("parameters"),
                document.string("expires_at"), document.bool("pushed"), document.optionalString("user_code"),
                document.optionalString("verification_uri"), document.optionalString("verification_uri_complete"),
                document.optionalInteger("interval"));
    }
}
