package dev.tokenvault.client;

/**
 * Filters and paging for {@link TokenVaultClient#list(ListOptions)}; {@code null} leaves a member
 * out. {@code ListOptions.all().withNamespace("payments").withLimit(50)}.
 *
 * @param status only credentials of this status ({@code active}, {@code needs_reauth}, …)
 * @param cursor the previous page's {@link Page#nextCursor()}
 * @param limit 1-500; {@code null} leaves the daemon's default (100)
 */
public record ListOptions(String namespace, String status, String cursor, Integer limit) {
    /** No filter, the first page. */
    public static ListOptions all() {
        return new ListOptions(null, null, null, null);
    }

    public ListOptions withNamespace(String namespace) {
        return new ListOptions(namespace, status, cursor, limit);
    }

    public ListOptions withStatus(String status) {
        return new ListOptions(namespace, status, cursor, limit);
    }

    public ListOptions withCursor(String cursor) {
        return new ListOptions(namespace, status, cursor, limit);
    }

    public ListOptions withLimit(Integer limit) {
        return new ListOptions(namespace, status, cursor, limit);
    }
}
