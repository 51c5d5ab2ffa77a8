package dev.tokenvault.client;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.List;
import java.util.Set;

/**
 * Which socket a client talks to when none is named: {@code $TOKENVAULT_SOCKET} when set, else
 * the packaged daemon's {@code /run/tokenvault/tokenvault.sock} when it exists, else
 * {@code ./.tokenvault/run/tokenvault.sock} (what {@code make run} starts) when {@code .tokenvault}
 * and {@code .tokenvault/run} are directories of the caller's own that no one else can write, else
 * the packaged path.
 *
 * <p>Why so careful: the current directory may be anyone's ({@code /tmp}, a shared checkout), and
 * a socket another user planted there would receive the tokens a program stores. The same rule is
 * in the CLI and the Python, Go and Swift clients.
 */
public final class DefaultSocket {
    /** The packaged daemon's socket (the Debian package, the systemd unit). */
    public static final String PACKAGED = "/run/tokenvault/tokenvault.sock";

    /** Where {@code make run} puts the socket, relative to the directory it was started in. */
    public static final String LOCAL = ".tokenvault/run/tokenvault.sock";

    private DefaultSocket() {
    }

    /** The socket path by the rule above, for this process's environment and working directory. */
    public static String path() {
        return resolve(System.getenv("TOKENVAULT_SOCKET"), Path.of(PACKAGED), Path.of("").toAbsolutePath());
    }

    /**
     * The rule, given what it reads: the value of {@code $TOKENVAULT_SOCKET} (or {@code null}), the
     * packaged path, and the working directory (Java cannot change its own, so the tests pass one).
     */
    static String resolve(String environment, Path packaged, Path workingDirectory) {
        if (environment != null && !environment.isEmpty()) {
            return environment;
        }
        if (Files.exists(packaged)) {
            return packaged.toString();
        }
        Path data = workingDirectory.resolve(".tokenvault");
        if (ownUnsharedDirectory(data) && ownUnsharedDirectory(data.resolve("run"))) {
            // Absolute: the path must not come to mean another directory's socket later.
            return workingDirectory.resolve(LOCAL).toAbsolutePath().normalize().toString();
        }
        return packaged.toString();
    }

    /**
     * A directory (not a link to one) owned by this process's effective user, which neither its
     * group nor others may write. Anything that cannot be checked counts as shared.
     */
    static boolean ownUnsharedDirectory(Path path) {
        try {
            PosixFileAttributes attributes =
                    Files.readAttributes(path, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            if (!attributes.isDirectory()) {
                return false;
            }
            Set<PosixFilePermission> permissions = attributes.permissions();
            if (permissions.contains(PosixFilePermission.GROUP_WRITE)
                    || permissions.contains(PosixFilePermission.OTHERS_WRITE)) {
                return false;
            }
            return sameUser(Files.getAttribute(path, "unix:uid", LinkOption.NOFOLLOW_LINKS), effectiveUid());
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | SecurityException error) {
            return false;
        }
    }

    /**
     * Whether {@code owner}, a file's {@code unix:uid} (an {@code Integer}, negative from 2^31 on),
     * is {@code user}, an effective uid as {@link #effectiveUid()} reads it (-1: unknown, no one).
     * A uid is unsigned 32 bits, so the two are compared as such.
     */
    static boolean sameUser(Object owner, long user) {
        return user >= 0 && owner instanceof Integer && Integer.toUnsignedLong((Integer) owner) == user;
    }

    /**
     * This process's effective uid, from {@code /proc/self/status} (the JDK has no {@code geteuid}),
     * or -1 where it cannot be read: then no local directory is trusted.
     */
    static long effectiveUid() {
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/self/status"), StandardCharsets.ISO_8859_1);
            for (String line : lines) {
                if (line.startsWith("Uid:")) {
                    String[] ids = line.substring(4).trim().split("\\s+");
                    return ids.length > 1 ? Long.parseLong(ids[1]) : -1;
                }
            }
        } catch (IOException | NumberFormatException | SecurityException error) {
            return -1;
        }
        return -1;
    }
}
