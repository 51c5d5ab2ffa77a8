package dev.tokenvault.client;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON (RFC 8259) read and written by the client itself, so that it needs nothing beyond the JDK.
 *
 * <p>Read: an object is a {@code LinkedHashMap<String, Object>} (a repeated name keeps its last
 * value), an array an {@code ArrayList<Object>}, a string a {@code String}, {@code true}/{@code
 * false} a {@code Boolean}, {@code null} {@code null}, an integer a {@code Long} (a
 * {@code BigInteger} past its range) and any other number a {@code Double} (a {@code BigDecimal}
 * past its range). The grammar is the strict one: no comments, trailing commas, leading zeros,
 * {@code NaN}, control characters in strings, or anything after the value. A number literal longer
 * than {@link #MAX_NUMBER} characters, or one even a {@code BigDecimal} cannot hold
 * ({@code 1e99999999999}), is malformed too.
 *
 * <p>Written: the same types (any {@code Map} with string keys, any {@code Iterable}), compact,
 * non-ASCII text as itself and a lone surrogate as an escape, so the result is always valid UTF-8.
 * The numbers written are exactly {@code Byte}, {@code Short}, {@code Integer}, {@code Long},
 * {@code BigInteger}, {@code BigDecimal}, and finite {@code Float} and {@code Double}, each as its
 * {@code toString()}; any other {@code Number} ({@code AtomicLong}, a library's own) is refused
 * with an {@code IllegalArgumentException} rather than guessed at.
 */
final class Json {
    /** Nesting deeper than this is refused rather than risking the reader's stack. */
    static final int MAX_DEPTH = 512;

    /**
     * A number literal longer than this is refused: the JDK parses a long one in quadratic time,
     * and no answer of the daemon's has one.
     */
    static final int MAX_NUMBER = 1000;

    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    /** Text that is not one JSON value, with where and why. */
    static final class MalformedException extends Exception {
        private static final long serialVersionUID = 1L;

        MalformedException(String message) {
            super(message);
        }
    }

    /** The value {@code utf8} holds; bytes that are not UTF-8 are malformed too. */
    static Object parse(byte[] utf8) throws MalformedException {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(utf8))
                    .toString();
        } catch (CharacterCodingException error) {
            throw new MalformedException("the text is not UTF-8");
        }
        return parse(text);
    }

    /** The value {@code text} holds, which must be the whole text (whitespace around it aside). */
    static Object parse(String text) throws MalformedException {
        Json reader = new Json(text);
        reader.skipWhitespace();
        Object value = reader.value(0);
        reader.skipWhitespace();
        if (reader.at != text.length()) {
            throw reader.error("text after the value");
        }
        return value;
    }

    /** {@code value} as compact JSON text. */
    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out, 0);
        return out.toString();
    }

    private Object value(int depth) throws MalformedException {
        if (at >= text.length()) {
            throw error("the text ended where a value was expected");
        }
        char c = text.charAt(at);
        switch (c) {
            case '{':
                return object(depth + 1);
            case '[':
                return array(depth + 1);
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character " + describe(c));
        }
    }

    private Map<String, Object> object(int depth) throws MalformedException {
        if (depth > MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH);
        }
        at++; // {
        Map<String, Object> members = new LinkedHashMap<>();
        skipWhitespace();
        if (peek() == '}') {
            at++;
            return members;
        }
        while (true) {
            skipWhitespace();
            if (peek() != '"') {
                throw error("a member name (a string) was expected");
            }
            String name = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            members.put(name, value(depth));
            skipWhitespace();
            char next = peek();
            at++;
            if (next == '}') {
                return members;
            }
            if (next != ',') {
                at--;
                throw error("',' or '}' was expected");
            }
        }
    }

    private List<Object> array(int depth) throws MalformedException {
        if (depth > MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH);
        }
        at++; // [
        List<Object> items = new ArrayList<>();
        skipWhitespace();
        if (peek() == ']') {
            at++;
            return items;
        }
        while (true) {
            skipWhitespace();
            items.add(value(depth));
            skipWhitespace();
            char next = peek();
            at++;
            if (next == ']') {
                return items;
            }
            if (next != ',') {
                at--;
                throw error("',' or ']' was expected");
            }
        }
    }

    private String string() throws MalformedException {
        at++; // "
        StringBuilder out = null;
        int start = at;
        while (true) {
            if (at >= text.length()) {
                throw error("the text ended inside a string");
            }
            char c = text.charAt(at);
            if (c == '"') {
                String tail = text.substring(start, at++);
                return out == null ? tail : out.append(tail).toString();
            }
            if (c < 0x20) {
                throw error("a control character " + describe(c) + " inside a string");
            }
            if (c != '\\') {
                at++;
                continue;
            }
            if (out == null) {
                out = new StringBuilder();
            }
            out.append(text, start, at);
            at++; // backslash
            if (at >= text.length()) {
                throw error("the text ended inside an escape");
            }
            char escaped = text.charAt(at++);
            switch (escaped) {
                case '"': out.append('"'); break;
                case '\\': out.append('\\'); break;
                case '/': out.append('/'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u':
                    // UTF-16 code units: an escaped surrogate pair becomes the pair, as in the text.
                    if (at + 4 > text.length()) {
                        throw error("the text ended inside a \\u escape");
                    }
                    int unit = 0;
                    for (int i = 0; i < 4; i++) {
                        int digit = Character.digit(text.charAt(at + i), 16);
                        if (digit < 0) {
                            throw error("a \\u escape without four hexadecimal digits");
                        }
                        unit = unit * 16 + digit;
                    }
                    at += 4;
                    out.append((char) unit);
                    break;
                default:
                    at--;
                    throw error("an unknown escape \\" + escaped);
            }
            start = at;
        }
    }

    private Object number() throws MalformedException {
        int start = at;
        if (peek() == '-') {
            at++;
        }
        if (peek() == '0') {
            at++;
        } else if (peek() >= '1' && peek() <= '9') {
            digits();
        } else {
            throw error("a digit was expected");
        }
        boolean integer = true;
        if (peek() == '.') {
            integer = false;
            at++;
            if (!(peek() >= '0' && peek() <= '9')) {
                throw error("a digit was expected after '.'");
            }
            digits();
        }
        if (peek() == 'e' || peek() == 'E') {
            integer = false;
            at++;
            if (peek() == '+' || peek() == '-') {
                at++;
            }
            if (!(peek() >= '0' && peek() <= '9')) {
                throw error("a digit was expected in the exponent");
            }
            digits();
        }
        if (at - start > MAX_NUMBER) {
            at = start;
            throw error("a number longer than " + MAX_NUMBER + " characters");
        }
        String literal = text.substring(start, at);
        try {
            if (integer) {
                try {
                    return Long.parseLong(literal);
                } catch (NumberFormatException tooLong) {
                    return new BigInteger(literal);
                }
            }
            double value = Double.parseDouble(literal);
            return Double.isInfinite(value) ? new BigDecimal(literal) : value;
        } catch (NumberFormatException | ArithmeticException outOfRange) {
            // The grammar was checked above: only an exponent past what BigDecimal holds is left.
            at = start;
            throw error("number out of range");
        }
    }

    private void digits() {
        while (peek() >= '0' && peek() <= '9') {
            at++;
        }
    }

    private Object literal(String word, Object value) throws MalformedException {
        if (!text.startsWith(word, at)) {
            throw error("unexpected character " + describe(text.charAt(at)));
        }
        at += word.length();
        return value;
    }

    private void expect(char c) throws MalformedException {
        if (peek() != c) {
            throw error("'" + c + "' was expected");
        }
        at++;
    }

    /** The next character, or NUL at the end (NUL is never valid there, so it fails as needed). */
    private char peek() {
        return at < text.length() ? text.charAt(at) : '\0';
    }

    private void skipWhitespace() {
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            at++;
        }
    }

    private MalformedException error(String why) {
        return new MalformedException(why + " at offset " + at);
    }

    private static String describe(char c) {
        return c >= 0x20 && c < 0x7f ? "'" + c + "'" : String.format("U+%04X", (int) c);
    }

    private static void write(Object value, StringBuilder out, int depth) {
        if (depth > MAX_DEPTH) {
            throw new IllegalArgumentException("nested deeper than " + MAX_DEPTH + " (a cycle?)");
        }
        if (value == null) {
            out.append("null");
        } else if (value instanceof String) {
            writeString((String) value, out);
        } else if (value instanceof Boolean) {
            out.append(value);
        } else if (value instanceof Double || value instanceof Float) {
            double number = ((Number) value).doubleValue();
            if (Double.isNaN(number) || Double.isInfinite(number)) {
                throw new IllegalArgumentException("JSON has no " + number);
            }
            out.append(value);
        } else if (value instanceof Long || value instanceof Integer || value instanceof Short
                || value instanceof Byte || value instanceof BigInteger || value instanceof BigDecimal) {
            out.append(value);
        } else if (value instanceof Number) {
            throw new IllegalArgumentException("no JSON form for a " + value.getClass().getName()
                    + ": numbers are written from Byte, Short, Integer, Long, BigInteger, BigDecimal, Float or Double");
        } else if (value instanceof Map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> member : ((Map<?, ?>) value).entrySet()) {
                if (!(member.getKey() instanceof String)) {
                    throw new IllegalArgumentException("a JSON object's names are strings, not " + member.getKey());
                }
                if (!first) {
                    out.append(',');
                }
                first = false;
                writeString((String) member.getKey(), out);
                out.append(':');
                write(member.getValue(), out, depth + 1);
            }
            out.append('}');
        } else if (value instanceof Iterable) {
            out.append('[');
            boolean first = true;
            for (Object item : (Iterable<?>) value) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                write(item, out, depth + 1);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException("no JSON form for a " + value.getClass().getName());
        }
    }

    private static void writeString(String value, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                case '\b': out.append("\\b"); break;
                case '\f': out.append("\\f"); break;
                default:
                    if (c < 0x20) {
                        escape(c, out);
                    } else if (Character.isHighSurrogate(c) && i + 1 < value.length()
                            && Character.isLowSurrogate(value.charAt(i + 1))) {
                        out.append(c).append(value.charAt(++i));
                    } else if (Character.isSurrogate(c)) {
                        escape(c, out); // a lone surrogate has no UTF-8 form
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }

    private static void escape(char c, StringBuilder out) {
        out.append(String.format("\\u%04x", (int) c));
    }
}
