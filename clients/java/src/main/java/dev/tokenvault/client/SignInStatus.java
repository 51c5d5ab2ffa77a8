package dev.tokenvault.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code GET …/authorization}: the caller's device sign-ins the daemon still polls for the
 * credential (each with {@code kind}, {@code provider}, {@code started_at}, {@code expires_at},
 * {@code next_poll_at}, {@code interval}), and how the caller's last sign-in into it ended
 * ({@code at}, {@code outcome} {@code authorized} or {@code failed}, {@code reason}), or {@code null}.
 */
public record SignInStatus(List<Map<String, Object>> pending, Map<String, Object> last) {
    public SignInStatus {
        pending = List.copyOf(pending);
    }

    static SignInStatus from(Document document) {
        List<Map<String, Object>> pending = new ArrayList<>();
        List<Object> items = document.optionalList("pending");
        for (Object item : items == null ? List.of() : items) {
            pending.add(Document.of(item).raw());
        }
        return new SignInStatus(pending, document.optionalObject("last"));
    }
}
