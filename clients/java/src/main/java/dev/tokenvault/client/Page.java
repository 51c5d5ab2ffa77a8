package dev.tokenvault.client;

import java.util.List;

/**
 * One page of a listing; pass {@link #nextCursor()} for the next ({@code null}: this was the last).
 */
public record Page<T>(List<T> items, String nextCursor) {
    public Page {
        items = List.copyOf(items);
    }
}
