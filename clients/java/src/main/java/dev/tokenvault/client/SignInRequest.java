package dev.tokenvault.client;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@link TokenVaultClient#startSignIn} sends: the provider instance, where the person comes
 * back to, and what to ask for. The daemon makes and keeps the state, PKCE verifier and nonce.
 * {@code SignInRequest.url("idp", "https://app.example/cb").withScopes(List.of("profile"))};
 * {@code SignInRequest.device("idp")} for a device sign-in the daemon polls.
 *
 * @param redirectUri where the provider sends the person back; {@code null} for mode {@code device}
 * @param parameters extra authorization request parameters
 * @param labels the credential's labels; {@code null} keeps those of a credential being repaired
 *     (an empty map clears them)
 * @param mode {@code url} (the authorization URL), {@code parameters} (the request's parameters,
 *     for a mobile SDK) or {@code device} (a user code while the daemon polls)
 */
public record SignInRequest(String provider, String redirectUri, List<String> scopes, String loginHint, String prompt,
        List<String> resources, Map<String, String> parameters, Map<String, String> labels, String mode) {

    public SignInRequest {
        scopes = scopes == null ? List.of() : List.copyOf(scopes);
        resources = resources == null ? List.of() : List.copyOf(resources);
        parameters = parameters == null ? Map.of() : Map.copyOf(parameters);
        labels = labels == null ? null : Map.copyOf(labels);
        mode = mode == null ? "url" : mode;
    }

    /** A sign-in answered with the authorization URL to send the person to. */
    public static SignInRequest url(String provider, String redirectUri) {
        return new SignInRequest(provider, redirectUri, null, null, null, null, null, null, "url");
    }

    /** A device sign-in (RFC 8628): a user code to show, while the daemon polls for the tokens. */
    public static SignInRequest device(String provider) {
        return new SignInRequest(provider, null, null, null, null, null, null, null, "device");
    }

    public SignInRequest withScopes(List<String> scopes) {
        return new SignInRequest(provider, redirectUri, scopes, loginHint, prompt, resources, parameters, labels, mode);
    }

    public SignInRequest withLoginHint(String loginHint) {
        return new SignInRequest(provider, redirectUri, scopes, loginHint, prompt, resources, parameters, labels, mode);
    }

    public SignInRequest withPrompt(String prompt) {
        return new SignInRequest(provider, redirectUri, scopes, loginHint, prompt, resources, parameters, labels, mode);
    }

    public SignInRequest withResources(List<String> resources) {
        return new SignInRequest(provider, redirectUri, scopes, loginHint, prompt, resources, parameters, labels, mode);
    }

    public SignInRequest withParameters(Map<String, String> parameters) {
        return new SignInRequest(provider, redirectUri, scopes, loginHint, prompt, resources, parameters, labels, mode);
    }

    public SignInRequest withLabels(Map<String, String> labels) {
        return new SignInRequest(provider, redirectUri, scopes, loginHint, prompt, resources, parameters, labels, mode);
    }

    /** {@code url}, {@code parameters} or {@code device}. */
    public SignInRequest withMode(String mode) {
        return new SignInRequest(provider, redirectUri, scopes, loginHint, prompt, resources, parameters, labels, mode);
    }

    /** The request's JSON document. */
    Map<String, Object> toJson() {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("provider", provider);
        body.put("scopes", scopes);
        body.put("resources", resources);
        body.put("parameters", parameters);
        body.put("mode", mode);
        if (redirectUri != null) {
            body.put("redirect_uri", redirectUri);
        }
        if (loginHint != null) {
            body.put("login_hint", loginHint);
        }
        if (prompt != null) {
            body.put("prompt", prompt);
        }
        if (labels != null) {
            body.put("labels", labels);
        }
        return body;
    }
}
