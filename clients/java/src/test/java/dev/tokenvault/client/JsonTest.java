package dev.tokenvault.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The client's own JSON reader and writer: RFC 8259 exactly, since nothing else checks them. */
class JsonTest {
    @Test
    void valuesOfEveryKindAreRead() throws Exception {
        Object value = Json.parse(" {\"a\": [1, -2, 3.5, -0.25e2, 1E3, true, false, null, \"x\"],"
                + " \"b\": {\"c\": {}}, \"d\": [], \"e\": 0, \"a\": [\"repeated: the last wins\"]}\n");
        Map<String, Object> expected = new LinkedHashMap<>();
        expected.put("a", List.of("repeated: the last wins"));
        expected.put("b", Map.of("c", Map.of()));
        expected.put("d", List.of());
        expected.put("e", 0L);
        assertEquals(expected, value);
        List<Object> numbers = new ArrayList<>(Arrays.asList(1L, -2L, 3.5, -25.0, 1000.0, true, false, null, "x"));
        assertEquals(numbers, Json.parse("[1, -2, 3.5, -0.25e2, 1E3, true, false, null, \"x\"]"));
        assertEquals(Long.MAX_VALUE, Json.parse("9223372036854775807"));
        assertEquals(new BigInteger("9223372036854775808"), Json.parse("9223372036854775808"));
        assertEquals(new BigDecimal("1e999"), Json.parse("1e999"));
        assertNull(Json.parse("null"));
    }

    @Test
    void stringsWithEveryEscapeAndSurrogatePairsAreRead() throws Exception {
        assertEquals("\"\\/\b\f\n\r\t", Json.parse("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""));
        assertEquals("é✓", Json.parse("\"\\u00e9\\u2713\""));
        assertEquals("😀", Json.parse("\"\\ud83d\\ude00\""));
        assertEquals("😀 naïve", Json.parse("\"😀 naïve\"".getBytes(StandardCharsets.UTF_8)));
        assertEquals("\ud800", Json.parse("\"\\ud800\""), "a lone escaped surrogate is kept as it is");
        assertEquals("", Json.parse("\"\""));
    }

    @Test
    void malformedTextIsRefused() {
        for (String text : List.of("", " ", "{", "[1,]", "{\"a\":1,}", "[1 2]", "{\"a\" 1}", "{a:1}", "01", "-",
                "1.", ".5", "1e", "+1", "NaN", "Infinity", "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"",
                "\"a\nb\"", "\"tab\there\"", "[1] x", "{} {}", "'single'", "[1,,2]", "\u00a0[]", "//\n1", "[\"a\"]]")) {
            assertThrows(Json.MalformedException.class, () -> Json.parse(text), text);
        }
        assertThrows(Json.MalformedException.class, () -> Json.parse(new byte[] {'"', (byte) 0xc3, '"'}));
        assertThrows(Json.MalformedException.class, () -> Json.parse(new byte[] {'"', (byte) 0xed, (byte) 0xa0,
                (byte) 0x80, '"'}), "an encoded surrogate is not UTF-8");
        String deep = "[".repeat(Json.MAX_DEPTH + 1) + "]".repeat(Json.MAX_DEPTH + 1);
        assertTrue(assertThrows(Json.MalformedException.class, () -> Json.parse(deep)).getMessage().contains("deeper"));
        String deepest = "[".repeat(Json.MAX_DEPTH) + "]".repeat(Json.MAX_DEPTH);
        assertDoesNotThrow(() -> Json.parse(deepest));
    }

    /** A number the JDK cannot hold, or one so long that reading it would take quadratic time, is malformed. */
    @Test
    void hugeNumbersAreMalformedNotANumberFormatException() {
        for (String text : List.of("1e99999999999", "-1.5E+99999999999", "[-1e99999999999]", "{\"a\":2e2147483648}")) {
            Json.MalformedException error = assertThrows(Json.MalformedException.class, () -> Json.parse(text), text);
            assertTrue(error.getMessage().startsWith("number out of range"), error.getMessage());
        }
        String longest = "-" + "1".repeat(Json.MAX_NUMBER - 1);
        assertDoesNotThrow(() -> Json.parse(longest));
        assertTrue(assertThrows(Json.MalformedException.class, () -> Json.parse(longest + "1")).getMessage()
                .contains("longer than " + Json.MAX_NUMBER), "one character more is refused");
        String megabytes = "[" + "9".repeat(4 << 20) + "]";
        Json.MalformedException tooLong = assertTimeoutPreemptively(Duration.ofSeconds(10),
                () -> assertThrows(Json.MalformedException.class, () -> Json.parse(megabytes)));
        assertTrue(tooLong.getMessage().contains("longer than"), tooLong.getMessage());
    }

    @Test
    void valuesAreWrittenCompactAndReadBackTheSame() throws Exception {
        Map<String, Object> document = new LinkedHashMap<>();
        document.put("text", "quote \" backslash \\ slash / controls \b\f\n\r\t\u0001\u001f del \u007f");
        document.put("unicode", "é ✓ 😀");
        document.put("numbers", List.of(0, -1, 2L, 3.25, Long.MIN_VALUE, new BigInteger("123456789012345678901234567890"),
                (short) 7, (byte) -8, 0.5f, new BigDecimal("1E+3")));
        document.put("flags", Arrays.asList(true, false, null));
        document.put("nested", Map.of("empty", Map.of(), "list", List.of(List.of())));
        String written = Json.write(document);
        assertEquals("{\"text\":\"quote \\\" backslash \\\\ slash / controls \\b\\f\\n\\r\\t\\u0001\\u001f del \u007f\","
                + "\"unicode\":\"é ✓ 😀\",\"numbers\":[0,-1,2,3.25,-9223372036854775808,123456789012345678901234567890,"
                + "7,-8,0.5,1E+3],"
                + "\"flags\":[true,false,null],", written.substring(0, written.indexOf("\"nested\"")));
        assertEquals(Json.parse(written), Json.parse(Json.write(Json.parse(written))));
        Map<?, ?> read = (Map<?, ?>) Json.parse(written.getBytes(StandardCharsets.UTF_8));
        assertEquals(document.get("text"), read.get("text"));
        assertEquals(document.get("unicode"), read.get("unicode"));
        // A lone surrogate has no UTF-8 form: it is escaped, so the text stays valid UTF-8.
        assertEquals("\"a\\ud800b\"", Json.write("a\ud800b"));
        assertArrayEquals("\"\\udc00\"".getBytes(StandardCharsets.UTF_8),
                Json.write("\udc00").getBytes(StandardCharsets.UTF_8));
        assertEquals("\"😀\"", Json.write("\ud83d\ude00"));
    }

    @Test
    void valuesJsonHasNoFormForAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> Json.write(Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> Json.write(Double.POSITIVE_INFINITY));
        assertThrows(IllegalArgumentException.class, () -> Json.write(Map.of(1, "a")));
        assertThrows(IllegalArgumentException.class, () -> Json.write(new Object()));
        IllegalArgumentException number = assertThrows(IllegalArgumentException.class,
                () -> Json.write(new java.util.concurrent.atomic.AtomicLong(1)));
        assertTrue(number.getMessage().contains("AtomicLong") && number.getMessage().contains("BigDecimal"),
                number.getMessage());
        List<Object> cycle = new ArrayList<>();
        cycle.add(cycle);
        assertThrows(IllegalArgumentException.class, () -> Json.write(cycle));
    }
}
