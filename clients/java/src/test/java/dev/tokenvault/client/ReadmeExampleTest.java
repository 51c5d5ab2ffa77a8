package dev.tokenvault.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** clients/java/README.md's Java blocks are ReadmeExample's marked lines, and they run as the README says. */
class ReadmeExampleTest {
    private static List<String> blocks(String text, Pattern pattern) {
        List<String> blocks = new ArrayList<>();
        Matcher block = pattern.matcher(text);
        while (block.find()) {
            blocks.add(block.group(1).replaceAll("\\s+", ""));
        }
        return blocks;
    }

    @Test
    void theReadmeShowsTheExamplesLines() throws Exception {
        String readme = Files.readString(Repository.root().resolve("clients/java/README.md"));
        String source = Files.readString(Repository.root()
                .resolve("clients/java/src/test/java/dev/tokenvault/client/ReadmeExample.java"));
        List<String> shown = blocks(readme, Pattern.compile("(?s)```java\n(.*?)```"));
        List<String> compiled = blocks(source, Pattern.compile("(?s)// README begin\n(.*?)// README end"));
        assertEquals(4, compiled.size());
        assertEquals(compiled, shown, "README.md's Java blocks differ from ReadmeExample's marked lines");
    }

    @Test
    void theProjectReadmeShowsTheWalkThroughsFirstLines() throws Exception {
        String readme = Files.readString(Repository.root().resolve("README.md"));
        String source = Files.readString(Repository.root()
                .resolve("clients/java/src/test/java/dev/tokenvault/client/ReadmeExample.java"));
        String section = readme.substring(readme.indexOf("From Java 17, with"));
        String shown = blocks(section, Pattern.compile("(?s)```java\n(.*?)```")).get(0);
        String compiled = blocks(source, Pattern.compile("(?s)// README begin\n(.*?)// README end")).get(0);
        assertTrue(shown.length() > 100 && compiled.startsWith(shown),
                "README.md's Java lines are not the first of ReadmeExample.walkThrough's");
    }

    @Test
    void theExamplesPrintWhatTheReadmeSays() throws Exception {
        try (TestProvider provider = new TestProvider();
                TestReceiver receiver = new TestReceiver();
                TestDaemon daemon = TestDaemon.start(provider, receiver.url)) {
            TokenVaultClient vault = new TokenVaultClient(daemon.socket);
            vault.put("payments/alice", "idp", provider.issue(), null);
            String printed = printed(() -> {
                ReadmeExample.walkThrough(daemon.socket);
                ReadmeExample.callThroughTheProxy(vault);
            });
            assertEquals("Bearer at-3\npayments/alice active\npayments/dave active\nmin_ttl_unreachable\n"
                    + "200 hello from the api\n\n", printed);
            vault.delete("payments/alice");
            TestReceiver.Delivery delivery = receiver.waitFor("credential.deleted", java.time.Duration.ofSeconds(20));
            assertEquals("", printed(() -> ReadmeExample.receive(daemon.webhookSecret, delivery.headers(),
                    delivery.body())));
            String refused = printed(() -> ReadmeExample.receive(daemon.webhookSecret, delivery.headers(),
                    "{}".getBytes(StandardCharsets.UTF_8)));
            assertTrue(refused.startsWith("refused: no signature matches"), refused);
            assertEquals("refused: webhook-id, webhook-timestamp and webhook-signature are all required\n",
                    printed(() -> ReadmeExample.receive(daemon.webhookSecret, Map.of(), delivery.body())));
        }
    }

    /** What {@code run} printed on standard output (the tests run one at a time). */
    private static String printed(Runnable run) {
        PrintStream standard = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            run.run();
        } finally {
            System.setOut(standard);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }
}
