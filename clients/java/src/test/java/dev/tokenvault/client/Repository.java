package dev.tokenvault.client;

import java.nio.file.Files;
import java.nio.file.Path;

/** The checkout the tests run from: {@code -Dtokenvault.repository}, else found above the working directory. */
final class Repository {
    private Repository() {
    }

    static Path root() {
        String given = System.getProperty("tokenvault.repository");
        if (given != null && !given.isEmpty()) {
            return Path.of(given).toAbsolutePath();
        }
        for (Path at = Path.of("").toAbsolutePath(); at != null; at = at.getParent()) {
            if (Files.isRegularFile(at.resolve("docs/openapi.yaml")) && Files.isDirectory(at.resolve("clients/java"))) {
                return at;
            }
        }
        throw new IllegalStateException("no TokenVault checkout above " + Path.of("").toAbsolutePath()
                + ": set -Dtokenvault.repository");
    }

    /** The daemon to test: {@code $TOKENVAULT_BIN}, else the checkout's {@code .build/debug/tokenvault}. */
    static Path binary() {
        String given = System.getenv("TOKENVAULT_BIN");
        return given != null && !given.isEmpty() ? Path.of(given) : root().resolve(".build/debug/tokenvault");
    }
}
