package dev.tokenvault.client;

import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Verifies a webhook delivery signed the way Standard Webhooks specifies: HMAC-SHA256 over
 * {@code <webhook-id>.<webhook-timestamp>.<raw body>} with the endpoint's secret ({@code whsec_} +
 * base64), sent as one or more space-separated {@code v1,<base64>} entries in
 * {@code webhook-signature}, and a timestamp within the tolerance of now (docs/webhooks.md).
 */
public final class Webhooks {
    /** How far a delivery's timestamp may be from the clock by default: 5 minutes. */
    public static final Duration DEFAULT_TOLERANCE = Duration.ofMinutes(5);

    private Webhooks() {
    }

    /**
     * Returns when {@code body} with these headers was signed with {@code secret} within 5 minutes
     * of the clock; throws otherwise. Pass the body exactly as received, before any JSON parsing.
     *
     * @param headers the request's headers, names in any case; a value may be a {@code String} or a
     *     collection of them (the first counts), as {@code com.sun.net.httpserver.Headers} and
     *     {@code java.net.http.HttpHeaders.map()} hold them
     * @throws IllegalArgumentException the secret is not {@code whsec_} followed by base64
     */
    public static void verify(String secret, Map<String, ?> headers, byte[] body) throws WebhookVerificationException {
        verify(secret, headers, body, DEFAULT_TOLERANCE, Instant.now());
    }

    /** {@link #verify(String, Map, byte[])} with another tolerance and clock reading. */
    public static void verify(String secret, Map<String, ?> headers, byte[] body, Duration tolerance, Instant now)
            throws WebhookVerificationException {
        String id = header(headers, "webhook-id");
        String timestamp = header(headers, "webhook-timestamp");
        String signatures = header(headers, "webhook-signature");
        if (id == null || id.isEmpty() || timestamp == null || timestamp.isEmpty()
                || signatures == null || signatures.isEmpty()) {
            throw new WebhookVerificationException(
                    "webhook-id, webhook-timestamp and webhook-signature are all required");
        }
        long sent;
        try {
            sent = Long.parseLong(timestamp);
        } catch (NumberFormatException notANumber) {
            throw new WebhookVerificationException("webhook-timestamp is not a number of seconds");
        }
        try {
            if (Duration.between(Instant.ofEpochSecond(sent), now).abs().compareTo(tolerance) > 0) {
                throw new WebhookVerificationException("webhook-timestamp is too far from the current time");
            }
        } catch (DateTimeException | ArithmeticException outOfRange) {
            throw new WebhookVerificationException("webhook-timestamp is too far from the current time");
        }
        byte[] key = key(secret);
        byte[] expected = Base64.getEncoder().encode(sign(key, (id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8), body));
        for (String entry : signatures.split(" ")) {
            int comma = entry.indexOf(',');
            if (comma > 0 && entry.substring(0, comma).equals("v1")
                    && MessageDigest.isEqual(entry.substring(comma + 1).getBytes(StandardCharsets.UTF_8), expected)) {
                return;
            }
        }
        throw new WebhookVerificationException("no signature matches");
    }

    /**
     * The secret's key: base64 after an optional {@code whsec_}, decoded as strictly as Python's
     * {@code base64.b64decode(validate=True)} and Go's {@code base64.StdEncoding}: the standard
     * alphabet only (no URL-safe letters, no spaces), padded to a multiple of 4. A line break is
     * refused too, as Python does (Go would skip it).
     */
    private static byte[] key(String secret) {
        String encoded = secret.startsWith("whsec_") ? secret.substring("whsec_".length()) : secret;
        // Java's basic decoder takes unpadded text too: the length is what it does not check.
        if (encoded.length() % 4 != 0) {
            throw notBase64();
        }
        for (int i = 0; i < encoded.length(); i++) {
            char c = encoded.charAt(i);
            boolean alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                    || c == '+' || c == '/' || c == '=';
            if (!alphabet) {
                throw notBase64();
            }
        }
        try {
            return Base64.getDecoder().decode(encoded); // and '=' only at the end, at most two
        } catch (IllegalArgumentException notBase64) {
            throw notBase64();
        }
    }

    private static IllegalArgumentException notBase64() {
        return new IllegalArgumentException("the secret is not whsec_ followed by base64");
    }

    private static byte[] sign(byte[] key, byte[] prefix, byte[] body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            if (key.length == 0) {
                key = new byte[1]; // HMAC pads the key with zeros: an empty key is one zero byte
            }
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(prefix);
            return mac.doFinal(body);
        } catch (NoSuchAlgorithmException | InvalidKeyException error) {
            throw new IllegalStateException("HmacSHA256 is part of every Java platform", error);
        }
    }

    private static String header(Map<String, ?> headers, String name) {
        for (Map.Entry<String, ?> header : headers.entrySet()) {
            if (header.getKey() != null && header.getKey().toLowerCase(Locale.ROOT).equals(name)) {
                Object value = header.getValue();
                if (value instanceof Collection) {
                    Collection<?> values = (Collection<?>) value;
                    value = values.isEmpty() ? null : values.iterator().next();
                }
                return value == null ? null : value.toString();
            }
        }
        return null;
    }
}
