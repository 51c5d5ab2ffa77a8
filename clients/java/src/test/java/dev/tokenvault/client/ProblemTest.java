package dev.tokenvault.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Problems and documents parsed from the daemon's answers, without a daemon: classes, fields, what is quoted. */
class ProblemTest {
    /** The class each documented status is thrown as, written out here to check the client's table. */
    private static final Map<Integer, Class<? extends ProblemException>> CLASSES = Map.ofEntries(
            Map.entry(400, BadRequestException.class), Map.entry(403, ForbiddenException.class),
            Map.entry(404, NotFoundException.class), Map.entry(405, MethodNotAllowedException.class),
            Map.entry(409, ConflictException.class), Map.entry(413, PayloadTooLargeException.class),
            Map.entry(415, UnsupportedMediaTypeException.class), Map.entry(422, UnprocessableException.class),
            Map.entry(429, TooManyRequestsException.class), Map.entry(500, InternalErrorException.class),
            Map.entry(502, BadGatewayException.class), Map.entry(503, UnavailableException.class),
            Map.entry(504, GatewayTimeoutException.class));

    private static ProblemException parse(int status, String type, String body) {
        return ProblemException.fromAnswer(status, type, body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void everyCodeTheApiDocumentsIsMappedToTheClassOfItsStatus() throws Exception {
        String text = Files.readString(Repository.root().resolve("docs/openapi.yaml"));
        String table = text.substring(text.indexOf("Codes in use:"), text.indexOf("Never sent by the API"));
        Map<String, Integer> documented = new LinkedHashMap<>();
        Matcher row = Pattern.compile("(?m)^\\s*\\| (\\d{3}) \\| (.*) \\|$").matcher(table);
        while (row.find()) {
            Matcher code = Pattern.compile("`([a-z_]+)`").matcher(row.group(2));
            while (code.find()) {
                documented.put(code.group(1), Integer.parseInt(row.group(1)));
            }
        }
        assertTrue(documented.size() > 40, documented.toString());
        assertEquals(documented, ProblemException.CODES);
        for (Map.Entry<String, Integer> entry : documented.entrySet()) {
            // Whatever status it arrives with (a proxy in between), a code is its documented class.
            ProblemException problem = parse(599, "application/problem+json",
                    "{\"code\":\"" + entry.getKey() + "\",\"status\":599}");
            assertSame(CLASSES.get(entry.getValue()), problem.getClass(), entry.getKey());
        }
        assertSame(ProblemException.class, parse(418, "application/problem+json", "{\"code\":\"new_code\"}").getClass());
        assertSame(ConflictException.class, parse(409, "application/problem+json", "{\"code\":\"new_code\"}").getClass());
    }

    @Test
    void aProblemDocumentBecomesItsCodesClass() {
        ProblemException error = parse(400, "application/problem+json", "{\"status\":400,\"code\":\"invalid_field\","
                + "\"field\":\"limit\",\"detail\":\"too big\",\"instance\":\"urn:tokenvault:request:x\",\"title\":\"Invalid field\"}");
        assertTrue(error instanceof BadRequestException);
        assertEquals("invalid_field", error.code());
        assertEquals("limit", error.field());
        assertEquals("urn:tokenvault:request:x", error.instance());
        assertEquals("Invalid field", error.title());
        assertEquals(400, error.status());
        assertEquals("too big (400 invalid_field, field limit, urn:tokenvault:request:x)", error.getMessage());
        ProblemException forbidden = parse(403, "application/problem+json",
                "{\"code\":\"forbidden\",\"permission\":\"token:read\",\"title\":\"Forbidden\"}");
        assertTrue(forbidden instanceof ForbiddenException);
        assertEquals("token:read", forbidden.permission());
        assertEquals("Forbidden (403 forbidden, needs token:read)", forbidden.getMessage());
        assertEquals(new Problem(403, "forbidden", "Forbidden", null, null, "token:read", null), forbidden.problem());
    }

    @Test
    void anAnswerWithoutADocumentIsQuotedOnlyFromAnErrorStatus() {
        ProblemException failed = parse(502, "text/html", "<html>bad gateway</html>");
        assertTrue(failed instanceof BadGatewayException);
        assertEquals("http_502", failed.code());
        assertTrue(failed.getMessage().contains("bad gateway"), failed.getMessage());
        assertEquals(200, parse(502, "text/plain", "x".repeat(1000)).detail().length());
        assertEquals("http_500", parse(500, "application/json", "{not json").code());
        assertEquals("http_400", parse(400, "application/json", "{\"code\":7}").code());
        // A 200 that is not what was asked for may carry a token: never quoted.
        ProblemException success = parse(200, "application/json", "{\"access_token\":\"secret-token\"}");
        assertFalse(success.getMessage().contains("secret-token"));
        assertNull(success.detail());
        assertSame(ProblemException.class, success.getClass());
    }

    /** A number the JDK cannot hold is malformed JSON wherever an answer is read, never a NumberFormatException. */
    @Test
    void aHugeNumberInAnAnswerIsMalformedJson() {
        ProblemException problem = parse(500, "application/problem+json", "{\"code\":\"x\",\"status\":1e99999999999}");
        assertEquals("http_500", problem.code());
        Transport.Reply reply = new Transport.Reply(200, List.of(),
                "{\"access_token\":\"a\",\"expires_in\":1e99999999999}".getBytes(StandardCharsets.UTF_8));
        UnexpectedResponseException unexpected = assertThrows(UnexpectedResponseException.class,
                () -> reply.decode(Token::from));
        assertTrue(unexpected.getMessage().contains("not JSON: number out of range"), unexpected.getMessage());
    }

    @Test
    void aFailedSignInOfACredentialThatDoesNotExistParses() throws Exception {
        Event event = Event.from(Document.of(Json.parse("{\"type\":\"authorization_failed\","
                + "\"credential_id\":\"people/jane\",\"at\":\"2026-12-07T08:00:00.000Z\",\"error\":{\"code\":"
                + "\"access_denied\",\"message\":\"the device sign-in ended without tokens\"}}")));
        assertNull(event.status());
        assertNull(event.generation());
        assertEquals("access_denied", event.error().get("code"));
    }

    @Test
    void aCredentialsGrantParsesAndItsAbsenceIsNull() throws Exception {
        String metadata = "{\"id\":\"payments/reports\",\"namespace\":\"payments\",\"name\":\"reports\","
                + "\"provider\":\"idp\",\"kind\":\"oauth2\",\"status\":\"active\",\"generation\":1,"
                + "\"scopes\":[\"read\"],\"labels\":{},\"issued_at\":\"2026-01-01T00:00:00Z\","
                + "\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"2026-01-01T00:00:00Z\","
                + "\"has_refresh_token\":false,\"has_id_token\":false";
        Credential exchanged = Credential.from(Document.of(Json.parse(metadata + ",\"grant\":{\"audience\":"
                + "[\"https://api.example\"],\"requested_token_type\":\"urn:ietf:params:oauth:token-type:jwt\","
                + "\"resource\":[],\"scopes\":[\"read\"],\"subject\":\"payments/bob\",\"type\":\"token_exchange\"}}")));
        assertEquals(new Grant("token_exchange", List.of("read"), List.of("https://api.example"), List.of(),
                "payments/bob", "urn:ietf:params:oauth:token-type:jwt"), exchanged.grant());
        Credential obtained = Credential.from(Document.of(Json.parse(metadata + ",\"grant\":{\"audience\":[],"
                + "\"resource\":[\"https://api.example/v1\"],\"scopes\":[],\"type\":\"client_credentials\"}}")));
        assertEquals(new Grant("client_credentials", List.of(), List.of(), List.of("https://api.example/v1"), null, null),
                obtained.grant());
        assertThrows(UnsupportedOperationException.class, () -> obtained.grant().resources().add("x"));
        assertNull(Credential.from(Document.of(Json.parse(metadata + "}"))).grant());
        assertNull(Credential.from(Document.of(Json.parse(metadata + ",\"grant\":null}"))).grant());
        Transport.Reply untyped = new Transport.Reply(200, List.of(),
                (metadata + ",\"grant\":{\"scopes\":[]}}").getBytes(StandardCharsets.UTF_8));
        assertTrue(assertThrows(UnexpectedResponseException.class, () -> untyped.decode(Credential::from))
                .getMessage().contains("'type' is missing"));
    }

    @Test
    void aDocumentWithoutWhatTheApiPromisesIsAnUnexpectedResponse() {
        Transport.Reply reply = new Transport.Reply(200, List.of(),
                "{\"id\":\"a/b\"}".getBytes(StandardCharsets.UTF_8));
        UnexpectedResponseException missing = assertThrows(
                UnexpectedResponseException.class, () -> reply.decode(Credential::from));
        assertEquals(200, missing.status());
        assertTrue(missing.getMessage().contains("'namespace' is missing"), missing.getMessage());
        Transport.Reply notJson = new Transport.Reply(200, List.of(),
                "<html>".getBytes(StandardCharsets.UTF_8));
        assertTrue(assertThrows(UnexpectedResponseException.class,
                () -> notJson.decode(Token::from)).getMessage().contains("not JSON"));
        Transport.Reply wrongType = new Transport.Reply(200, List.of(),
                "{\"access_token\":7}".getBytes(StandardCharsets.UTF_8));
        assertTrue(assertThrows(UnexpectedResponseException.class,
                () -> wrongType.decode(Token::from)).getMessage().contains("'access_token' is not a string"));
    }
}
