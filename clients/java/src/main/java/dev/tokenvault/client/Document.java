package dev.tokenvault.client;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One JSON object of an answer, read member by member with the type the API promises. A member
 * that is missing or of another type is a {@link Missing}, which the transport turns into an
 * {@link UnexpectedResponseException}: a daemon of another version is reported as such, never as
 * a {@code ClassCastException} in the caller's code. Optional members may be absent or {@code null}
 * alike (docs/openapi.yaml, "Conventions").
 */
final class Document {
    private final Map<String, Object> members;

    private Document(Map<String, Object> members) {
        this.members = members;
    }

    /** A member that is not there or not what the API promises. */
    static final class Missing extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Missing(String message) {
            super(message);
        }
    }

    /** {@code value} as a document; it must be a JSON object. */
    static Document of(Object value) {
        if (!(value instanceof Map)) {
            throw new Missing("an object was expected, not " + kind(value));
        }
        Map<String, Object> members = new LinkedHashMap<>();
        for (Map.Entry<?, ?> member : ((Map<?, ?>) value).entrySet()) {
            members.put(String.valueOf(member.getKey()), member.getValue());
        }
        return new Document(members);
    }

    /** Every member as read, unmodifiable: what a newer daemon added is kept. */
    Map<String, Object> raw() {
        return Collections.unmodifiableMap(members);
    }

    String string(String name) {
        return required(name, optionalString(name));
    }

    String optionalString(String name) {
        return typed(name, String.class);
    }

    long integer(String name) {
        return required(name, optionalInteger(name));
    }

    Long optionalInteger(String name) {
        Object value = members.get(name);
        if (value == null) {
            return null;
        }
        if (value instanceof Long) {
            return (Long) value;
        }
        if (value instanceof Double && (Double) value == Math.rint((Double) value)
                && Math.abs((Double) value) < 0x1p53) {
            return ((Double) value).longValue(); // 3.0: an integer all the same
        }
        throw new Missing("'" + name + "' is not an integer but " + kind(value));
    }

    boolean bool(String name) {
        return required(name, typed(name, Boolean.class));
    }

    Document document(String name) {
        return of(required(name, members.get(name)));
    }

    /** An optional object member as a document, or {@code null}. */
    Document optionalDocument(String name) {
        Object value = members.get(name);
        return value == null ? null : of(value);
    }

    /** An optional object member, unmodifiable, or {@code null}. */
    Map<String, Object> optionalObject(String name) {
        Document value = optionalDocument(name);
        return value == null ? null : value.raw();
    }

    List<Object> list(String name) {
        return required(name, optionalList(name));
    }

    /** An optional array member, or {@code null}. */
    List<Object> optionalList(String name) {
        Object value = members.get(name);
        if (value == null) {
            return null;
        }
        if (!(value instanceof List)) {
            throw new Missing("'" + name + "' is not an array but " + kind(value));
        }
        return Collections.unmodifiableList(new ArrayList<>((List<?>) value));
    }

    /** An array of strings; absent or {@code null} is empty. */
    List<String> strings(String name) {
        return strings(name, optionalList(name));
    }

    /** An array of strings that must be there (it may be empty). */
    List<String> requiredStrings(String name) {
        return strings(name, list(name));
    }

    private static List<String> strings(String name, List<Object> values) {
        List<String> strings = new ArrayList<>();
        for (Object value : values == null ? List.of() : values) {
            if (!(value instanceof String)) {
                throw new Missing("'" + name + "' holds " + kind(value) + ", not only strings");
            }
            strings.add((String) value);
        }
        return List.copyOf(strings);
    }

    /** An object of strings; absent or {@code null} is empty. */
    Map<String, String> stringMap(String name) {
        Map<String, Object> values = optionalObject(name);
        Map<String, String> strings = new LinkedHashMap<>();
        if (values != null) {
            for (Map.Entry<String, Object> entry : values.entrySet()) {
                if (!(entry.getValue() instanceof String)) {
                    throw new Missing("'" + name + "." + entry.getKey() + "' is not a string");
                }
                strings.put(entry.getKey(), (String) entry.getValue());
            }
        }
        return Collections.unmodifiableMap(strings);
    }

    private <T> T typed(String name, Class<T> type) {
        Object value = members.get(name);
        if (value == null) {
            return null;
        }
        if (!type.isInstance(value)) {
            throw new Missing("'" + name + "' is not a " + type.getSimpleName().toLowerCase(Locale.ROOT) + " but " + kind(value));
        }
        return type.cast(value);
    }

    private static <T> T required(String name, T value) {
        if (value == null) {
            throw new Missing("'" + name + "' is missing");
        }
        return value;
    }

    private static String kind(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof Map) {
            return "an object";
        }
        if (value instanceof List) {
            return "an array";
        }
        if (value instanceof String) {
            return "a string";
        }
        if (value instanceof Boolean) {
            return "a boolean";
        }
        return "a number";
    }
}
