package dev.tokenvault.client;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

/**
 * {@link Webhooks#verify} against the Standard Webhooks specification's own example (the vectors
 * of clients/python/tests/test_webhooks.py and clients/go/webhook_test.go), the ways a delivery
 * must be refused, and the daemon's own deliveries.
 */
class WebhookTest {
    private static final String SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    private static final String ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    private static final String TIMESTAMP = "1614265330";
    private static final String SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    private static final byte[] BODY = "{\"test\": 2432232314}".getBytes(StandardCharsets.UTF_8);
    private static final Instant NOW = Instant.ofEpochSecond(1614265330 + 10);
    private static final Duration TOLERANCE = Webhooks.DEFAULT_TOLERANCE;

    private static Map<String, String> headers(String id, String timestamp, String signature) {
        Map<String, String> headers = new HashMap<>();
        if (id != null) {
            headers.put("webhook-id", id);
        }
        if (timestamp != null) {
            headers.put("webhook-timestamp", timestamp);
        }
        if (signature != null) {
            headers.put("webhook-signature", signature);
        }
        return headers;
    }

    @Test
    void theSpecificationsExampleIsAccepted() {
        assertDoesNotThrow(() -> Webhooks.verify(SECRET, headers(ID, TIMESTAMP, SIGNATURE), BODY, TOLERANCE, NOW));
        Map<String, String> upper = Map.of("WEBHOOK-ID", ID, "Webhook-Timestamp", TIMESTAMP, "WEBHOOK-SIGNATURE", SIGNATURE);
        assertDoesNotThrow(() -> Webhooks.verify(SECRET, upper, BODY, TOLERANCE, NOW));
        assertDoesNotThrow(() -> Webhooks.verify(SECRET, headers(ID, TIMESTAMP, "v1,bm90IGl0 v2,eA== " + SIGNATURE),
                BODY, TOLERANCE, NOW));
        // Headers as com.sun.net.httpserver.Headers and java.net.http.HttpHeaders.map() hold them.
        Map<String, List<String>> multi = Map.of("Webhook-id", List.of(ID), "Webhook-timestamp", List.of(TIMESTAMP),
                "Webhook-signature", List.of(SIGNATURE));
        assertDoesNotThrow(() -> Webhooks.verify(SECRET, multi, BODY, TOLERANCE, NOW));
    }

    @Test
    void anythingChangedIsRefused() {
        List<Object[]> refused = List.of(
                new Object[] {SECRET, headers(ID, TIMESTAMP, SIGNATURE), "{\"test\": 2432232315}"},
                new Object[] {"whsec_" + "A".repeat(32), headers(ID, TIMESTAMP, SIGNATURE), null},
                new Object[] {SECRET, headers("msg_other", TIMESTAMP, SIGNATURE), null},
                new Object[] {SECRET, headers(ID, "1614265331", SIGNATURE), null},
                new Object[] {SECRET, headers(ID, TIMESTAMP, "v2," + SIGNATURE.substring(3)), null},
                new Object[] {SECRET, headers(ID, TIMESTAMP, null), null},
                new Object[] {SECRET, headers(null, TIMESTAMP, SIGNATURE), null},
                new Object[] {SECRET, headers(ID, null, SIGNATURE), null},
                new Object[] {SECRET, headers(ID, TIMESTAMP, ""), null},
                new Object[] {SECRET, headers(ID, "soon", SIGNATURE), null},
                new Object[] {SECRET, headers(ID, "99999999999999999", SIGNATURE), null},
                new Object[] {SECRET, headers(ID, TIMESTAMP, SIGNATURE.substring(0, SIGNATURE.length() - 2)), null});
        for (Object[] delivery : refused) {
            @SuppressWarnings("unchecked")
            Map<String, String> headers = (Map<String, String>) delivery[1];
            byte[] body = delivery[2] == null ? BODY : ((String) delivery[2]).getBytes(StandardCharsets.UTF_8);
            assertThrows(WebhookVerificationException.class,
                    () -> Webhooks.verify((String) delivery[0], headers, body, TOLERANCE, NOW), headers.toString());
        }
        assertThrows(IllegalArgumentException.class,
                () -> Webhooks.verify("whsec_not base64!", headers(ID, TIMESTAMP, SIGNATURE), BODY, TOLERANCE, NOW));
    }

    /** As Python's {@code b64decode(validate=True)} and Go's {@code StdEncoding}: padded, standard alphabet only. */
    @Test
    void theSecretIsDecodedStrictly() throws Exception {
        byte[] key = new byte[32]; // base64 with one '='
        for (int i = 0; i < key.length; i++) {
            key[i] = (byte) (i * 37 + 200);
        }
        String padded = Base64.getEncoder().encodeToString(key);
        assertTrue(padded.endsWith("=") && !padded.endsWith("=="), padded);
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(key, "HmacSHA256"));
        mac.update((ID + "." + TIMESTAMP + ".").getBytes(StandardCharsets.UTF_8));
        String signature = "v1," + Base64.getEncoder().encodeToString(mac.doFinal(BODY));
        assertDoesNotThrow(() -> Webhooks.verify("whsec_" + padded, headers(ID, TIMESTAMP, signature), BODY, TOLERANCE, NOW));
        String secretBody = SECRET.substring("whsec_".length());
        for (String secret : List.of("whsec_" + padded.substring(0, padded.length() - 1), "whsec_" + padded + "=",
                "whsec_" + secretBody.substring(0, 31), "whsec_" + secretBody.replace('+', '-').replace('L', '_'),
                "whsec_" + secretBody.substring(0, 16) + "\n" + secretBody.substring(16),
                "whsec_" + secretBody.substring(0, 16) + " " + secretBody.substring(16), "whsec_YQ==YQ==",
                "whsec_" + secretBody.replace('w', '-'))) {
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> Webhooks.verify(secret, headers(ID, TIMESTAMP, SIGNATURE), BODY, TOLERANCE, NOW), secret);
            assertEquals("the secret is not whsec_ followed by base64", refused.getMessage());
        }
    }

    /** The prefix is optional and an empty {@code v1,} entry matches nothing, as in the Python and Go clients. */
    @Test
    void aSecretWithoutItsPrefixAndAnEmptySignatureEntry() {
        String bare = SECRET.substring("whsec_".length());
        assertDoesNotThrow(() -> Webhooks.verify(bare, headers(ID, TIMESTAMP, SIGNATURE), BODY, TOLERANCE, NOW));
        for (String signatures : List.of("v1,", "v1, v1,", "v1", ",", " ")) {
            WebhookVerificationException refused = assertThrows(WebhookVerificationException.class,
                    () -> Webhooks.verify(SECRET, headers(ID, TIMESTAMP, signatures), BODY, TOLERANCE, NOW), signatures);
            assertEquals("no signature matches", refused.getMessage());
        }
        assertDoesNotThrow(() -> Webhooks.verify(SECRET, headers(ID, TIMESTAMP, "v1, " + SIGNATURE), BODY, TOLERANCE, NOW));
        // An empty secret is an empty key (HMAC pads it with zeros), not an error, as in Python and Go.
        assertEquals("no signature matches", assertThrows(WebhookVerificationException.class,
                () -> Webhooks.verify("whsec_", headers(ID, TIMESTAMP, SIGNATURE), BODY, TOLERANCE, NOW)).getMessage());
    }

    @Test
    void aDeliveryTooOldOrTooNewIsRefused() {
        for (long offset : new long[] {301, -301}) {
            Instant late = Instant.ofEpochSecond(1614265330 + offset);
            assertThrows(WebhookVerificationException.class,
                    () -> Webhooks.verify(SECRET, headers(ID, TIMESTAMP, SIGNATURE), BODY, TOLERANCE, late));
        }
        assertDoesNotThrow(() -> Webhooks.verify(SECRET, headers(ID, TIMESTAMP, SIGNATURE), BODY,
                Duration.ofHours(1), Instant.ofEpochSecond(1614265330 + 3000)));
        assertThrows(WebhookVerificationException.class,
                () -> Webhooks.verify(SECRET, headers(ID, TIMESTAMP, SIGNATURE), BODY), "signed in 2021");
    }

    /** The daemon signs a deletion's event; the verifier takes it as sent and refuses it altered. */
    @Test
    void theDaemonsDeliveryIsAcceptedAndATamperedOneRefused() throws Exception {
        try (TestProvider provider = new TestProvider();
                TestReceiver receiver = new TestReceiver();
                TestDaemon daemon = TestDaemon.start(provider, receiver.url)) {
            TokenVaultClient client = new TokenVaultClient(daemon.socket);
            client.put("payments/alice", "idp", provider.issue(), null);
            client.delete("payments/alice");
            TestReceiver.Delivery delivery = receiver.waitFor("credential.deleted", Duration.ofSeconds(20));
            assertDoesNotThrow(() -> Webhooks.verify(daemon.webhookSecret, delivery.headers(), delivery.body()));
            Map<?, ?> event = (Map<?, ?>) Json.parse(delivery.body());
            assertEquals("payments/alice", ((Map<?, ?>) event.get("data")).get("id"));
            String body = new String(delivery.body(), StandardCharsets.UTF_8);
            for (String token : provider.issued()) {
                assertFalse(body.contains(token), "a delivery holds a token");
            }
            byte[] tampered = body.replace("alice", "mallory").getBytes(StandardCharsets.UTF_8);
            assertThrows(WebhookVerificationException.class,
                    () -> Webhooks.verify(daemon.webhookSecret, delivery.headers(), tampered));
            assertThrows(WebhookVerificationException.class,
                    () -> Webhooks.verify("whsec_" + "A".repeat(32), delivery.headers(), delivery.body()));
        }
    }
}
