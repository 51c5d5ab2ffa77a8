package dev.tokenvault.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which socket a client talks to when none is named: never one planted in a directory another
 * user could write (the same cases as clients/python/tests/test_default_socket.py and
 * clients/go/socket_test.go). Java cannot change its working directory or environment, so the
 * rule is given both.
 */
class DefaultSocketTest {
    @TempDir
    Path scratch;
    private Path packaged;
    private Path cwd;

    @BeforeEach
    void makeRunsLayout() throws IOException {
        packaged = scratch.resolve("packaged.sock");
        cwd = scratch.resolve("cwd");
        Files.createDirectories(cwd.resolve(".tokenvault/run"));
        mode(cwd.resolve(".tokenvault"), 0755);
        mode(cwd.resolve(".tokenvault/run"), 0755);
        // A stand-in for the socket: the rule looks at the directories, not at what is in them.
        Files.createFile(cwd.resolve(".tokenvault/run/tokenvault.sock"));
    }

    private String resolve() {
        return DefaultSocket.resolve(null, packaged, cwd);
    }

    private String local() {
        return cwd.resolve(".tokenvault/run/tokenvault.sock").toString();
    }

    private static void mode(Path path, int mode) throws IOException {
        Files.setAttribute(path, "unix:mode", mode);
    }

    @Test
    void theEnvironmentComesFirst() {
        assertEquals("/x/vault.sock", DefaultSocket.resolve("/x/vault.sock", packaged, cwd));
        assertEquals(local(), DefaultSocket.resolve("", packaged, cwd), "an empty variable counts as unset");
    }

    @Test
    void aPackagedDaemonComesBeforeTheCurrentDirectory() throws IOException {
        assertEquals(local(), resolve());
        Files.createFile(packaged);
        assertEquals(packaged.toString(), resolve());
    }

    @Test
    void aDirectoryOthersMayWriteIsRefused() throws IOException {
        for (String directory : new String[] {".tokenvault", ".tokenvault/run"}) {
            for (int mode : new int[] {0775, 0757, 01777}) {
                mode(cwd.resolve(directory), mode);
                assertEquals(packaged.toString(), resolve(), directory + " at " + Integer.toOctalString(mode));
                mode(cwd.resolve(directory), 0755);
            }
        }
        assertEquals(local(), resolve());
    }

    @Test
    void aLinkedDataDirectoryIsRefused() throws IOException {
        Files.move(cwd.resolve(".tokenvault"), cwd.resolve("elsewhere"));
        Files.createSymbolicLink(cwd.resolve(".tokenvault"), Path.of("elsewhere"));
        assertEquals(packaged.toString(), resolve());
    }

    @Test
    void aFileInPlaceOfTheDirectoryIsRefused() throws IOException {
        Path data = cwd.resolve(".tokenvault");
        Files.move(data, cwd.resolve("elsewhere"));
        Files.createFile(data);
        assertEquals(packaged.toString(), resolve());
    }

    @Test
    void theEffectiveUidIsTheOwnerOfWhatThisProcessCreates() throws IOException {
        Path made = Files.createFile(scratch.resolve("made"));
        assertEquals(Files.getAttribute(made, "unix:uid"), (int) DefaultSocket.effectiveUid());
    }

    @Test
    void anotherUsersDataDirectoryIsRefused() throws IOException {
        assumeTrue(DefaultSocket.effectiveUid() == 0, "changing a directory's owner needs root");
        Files.setAttribute(cwd.resolve(".tokenvault"), "unix:uid", 65534);
        assertEquals(packaged.toString(), resolve());
    }

    @Test
    void aLinkedRunDirectoryIsRefused() throws IOException {
        // As clients/go/socket.go (os.Lstat): .tokenvault/run must itself be a directory, not a link to one.
        Files.move(cwd.resolve(".tokenvault/run"), cwd.resolve(".tokenvault/elsewhere"));
        Files.createSymbolicLink(cwd.resolve(".tokenvault/run"), Path.of("elsewhere"));
        assertEquals(packaged.toString(), resolve());
        Files.delete(cwd.resolve(".tokenvault/run"));
        Files.createSymbolicLink(cwd.resolve(".tokenvault/run"), cwd.resolve(".tokenvault/elsewhere"));
        assertEquals(packaged.toString(), resolve(), "an absolute link too");
    }

    /** A uid is unsigned: the JDK's {@code unix:uid} Integer is negative from 2^31 on. */
    @Test
    void uidsAreComparedUnsigned() {
        assertTrue(DefaultSocket.sameUser(-2, 4294967294L), "uid 4294967294 read as the Integer -2");
        assertTrue(DefaultSocket.sameUser(Integer.MIN_VALUE, 2147483648L));
        assertTrue(DefaultSocket.sameUser(1000, 1000L));
        assertFalse(DefaultSocket.sameUser(1000, 1001L));
        assertFalse(DefaultSocket.sameUser(-2, -2L), "an unknown effective uid trusts nothing");
        assertFalse(DefaultSocket.sameUser(-1, -1L));
        assertFalse(DefaultSocket.sameUser(1000L, 1000L), "not what the JDK gives: not trusted");
        assertFalse(DefaultSocket.sameUser(null, 0L));
    }

    /** Given a relative working directory, the local socket is still named by an absolute path. */
    @Test
    void theLocalPathIsAbsoluteEvenFromARelativeDirectory() {
        Path relative = Path.of("").toAbsolutePath().relativize(cwd);
        assertFalse(relative.isAbsolute());
        String expected = cwd.toAbsolutePath().normalize() + "/.tokenvault/run/tokenvault.sock";
        assertEquals(expected, DefaultSocket.resolve(null, packaged, relative));
        assertEquals(expected, resolve());
    }

    /**
     * The public rule reads this process's environment and working directory: checked in other
     * JVMs started with a chosen environment and directory (Java cannot change its own).
     */
    @Test
    void thePublicRuleReadsTheProcesssEnvironmentAndDirectory() throws Exception {
        String packagedNow = Files.exists(Path.of(DefaultSocket.PACKAGED)) ? DefaultSocket.PACKAGED : null;
        assertEquals("/x/vault.sock", pathIn(cwd, "/x/vault.sock"));
        assertEquals(packagedNow != null ? packagedNow : cwd.toRealPath() + "/.tokenvault/run/tokenvault.sock",
                pathIn(cwd, null));
        assertEquals(DefaultSocket.PACKAGED, pathIn(scratch, ""));
        assertEquals(DefaultSocket.path(), new TokenVaultClient().socketPath());
        assertEquals(DefaultSocket.path(), new TokenVaultClient("").socketPath());
        assertEquals(DefaultSocket.path(), new TokenVaultClient(null, Duration.ofSeconds(1)).socketPath());
    }

    /** What {@link DefaultSocket#path()} answers in a JVM started in {@code directory} with {@code TOKENVAULT_SOCKET}. */
    private String pathIn(Path directory, String environment) throws Exception {
        Path probe = scratch.resolve("Probe.java");
        Files.writeString(probe, "class Probe { public static void main(String[] a) {"
                + " System.out.print(dev.tokenvault.client.DefaultSocket.path()); } }");
        Path client = Path.of(DefaultSocket.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ProcessBuilder builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--class-path", client.toString(), probe.toString()).directory(directory.toFile());
        builder.environment().remove("TOKENVAULT_SOCKET");
        if (environment != null) {
            builder.environment().put("TOKENVAULT_SOCKET", environment);
        }
        Process process = builder.redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the probe did not end");
        assertEquals(0, process.exitValue(), output);
        return output;
    }
}
