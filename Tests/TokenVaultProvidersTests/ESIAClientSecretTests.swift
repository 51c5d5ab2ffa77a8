import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultProviders

/// The pieces of ESIA's signed `client_secret` on their own: the timestamp format, the order of
/// the string to sign, and the signer process runner's limits.
@Suite struct ESIAClientSecretTests {
    @Test(arguments: [
        (1_795_331_550.0, "2026.11.22 07:12:30 +0000"), (1_798_761_599.9, "2026.12.31 23:59:59 +0000"),
        (946_684_805.0, "2000.01.01 00:00:05 +0000"),
    ])
    func timestampIsUTCWithDots(seconds: Double, expected: String) {
        #expect(ESIAClientSecret.timestamp(Date(timeIntervalSince1970: seconds)) == expected)
    }

    @Test func stringToSignIsTheDocumentedConcatenation() {
        #expect(
            ESIAClientSecret.stringToSign(
                clientID: "CID", scope: "openid fullname", timestamp: "2026.11.22 07:12:30 +0000",
                state: "4e1b0c6a-1111-4222-8333-444455556666", redirectURI: "https://r.example/cb")
                == "CIDopenid fullname2026.11.22 07:12:30 +00004e1b0c6a-1111-4222-8333-444455556666https://r.example/cb"
        )
    }

    @Test func commandGetsStdinAndGivesBackBothStreams() async {
        let command = ExternalCommand(
            arguments: ["/bin/sh", "-c", "tr a-z A-Z; echo warn >&2; exit 4"], timeoutSeconds: 2)
        let outcome = await command.run(input: Array("hello".utf8))
        #expect(outcome == .exited(status: 4, stdout: Array("HELLO".utf8), stderr: Array("warn\n".utf8)))
    }

    @Test func commandThatIgnoresStdinDoesNotHurtUs() async {
        let big = [UInt8](repeating: 65, count: 512 * 1024)
        let outcome = await ExternalCommand(arguments: ["/bin/true"], timeoutSeconds: 2).run(input: big)
        #expect(outcome == .exited(status: 0, stdout: [], stderr: []))
    }

    @Test func missingProgramFailsToStart() async {
        let outcome = await ExternalCommand(arguments: ["/nonexistent/signer"], timeoutSeconds: 1).run(input: [])
        guard case .failedToStart(let reason) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(reason.contains("No such file"))
    }

    @Test func timeoutKillsAProgramThatIgnoresSIGTERM() async {
        let started = ContinuousClock.now
        let command = ExternalCommand(
            arguments: ["/bin/sh", "-c", "trap '' TERM; echo partial >&2; while :; do sleep 0.05; done"],
            timeoutSeconds: 0.3)
        let outcome = await command.run(input: [])
        #expect(outcome == .timedOut(stderr: Array("partial\n".utf8)))
        // 0.3 s timeout + 0.2 s grace, then SIGKILL. Left running, the loop would never end; the
        // bound is loose because the parallel suite on 2 cores can delay the kill by seconds.
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func timeoutAlsoKillsWhatTheProgramStartedEvenIfItIgnoresSIGTERM() async throws {
        let directory = TemporaryDirectory()
        let pidFile = directory.file("child.pid")
        let script = "sh -c \"trap '' TERM; sleep 10\" & echo $! > '\(pidFile)'; wait"
        let outcome = await ExternalCommand(arguments: ["/bin/sh", "-c", script], timeoutSeconds: 0.3).run(input: [])
        #expect(outcome == .timedOut(stderr: []))
        let text = String(decoding: RawBytes.read(pidFile), as: UTF8.self)
        let pid = try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(await ESIAProviderTests.isGone(pid), "the child \(pid) that ignores SIGTERM still runs")
    }
}
