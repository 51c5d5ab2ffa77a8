import Foundation
import Testing
import TokenVaultClient

/// Which socket a client talks to when none is named: never one planted in a directory another
/// user could write.
@Suite("Default socket")
struct DefaultSocketTests {
    /// A scratch directory standing in for the current directory, with `make run`'s
    /// `.tokenvault/run` made in it (mode 0755, as `make run` leaves it) unless told otherwise.
    struct Scratch {
        let directory: String
        let packaged: String

        init(local: Bool = true) throws {
            directory =
                FileManager.default.temporaryDirectory
                .appendingPathComponent("default-socket-\(UUID().uuidString)").path
            packaged = directory + "/packaged/tokenvault.sock"
            if local {
                try FileManager.default.createDirectory(
                    atPath: directory + "/.tokenvault/run", withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o755])
                // A stand-in for the socket: the rule looks at the directories, not at their files.
                guard
                    FileManager.default.createFile(
                        atPath: directory + "/.tokenvault/run/tokenvault.sock", contents: nil)
                else { throw CocoaError(.fileWriteUnknown) }
            } else {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
        }

        var local: String { directory + "/.tokenvault/run/tokenvault.sock" }

        func resolve(_ environment: [String: String] = [:], dataDirectory: String? = nil) -> String {
            TokenVaultClient.defaultSocketPath(
                environment: environment, dataDirectory: dataDirectory, currentDirectory: directory,
                packaged: packaged)
        }

        func remove() { try? FileManager.default.removeItem(atPath: directory) }
    }

    @Test func theEnvironmentComesFirstThenANamedDataDirectory() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        #expect(scratch.resolve(["TOKENVAULT_SOCKET": "/x/vault.sock"], dataDirectory: "/d") == "/x/vault.sock")
        #expect(scratch.resolve(["TOKENVAULT_SOCKET": ""], dataDirectory: "/d") == "/d/run/tokenvault.sock")
    }

    @Test func aPackagedDaemonComesBeforeTheCurrentDirectory() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        #expect(scratch.resolve() == scratch.local)
        try FileManager.default.createDirectory(
            atPath: scratch.directory + "/packaged", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: scratch.packaged, contents: nil))
        #expect(scratch.resolve() == scratch.packaged)
    }

    @Test func noLocalDirectoryMeansThePackagedPath() throws {
        let scratch = try Scratch(local: false)
        defer { scratch.remove() }
        #expect(scratch.resolve() == scratch.packaged)
    }

    /// A `.tokenvault` or `run` directory that its group or others may write: anyone could have
    /// put the socket there.
    @Test(arguments: [".tokenvault", ".tokenvault/run"], [0o775, 0o757, 0o1777])
    func aDirectoryOthersMayWriteIsRefused(_ directory: String, _ mode: Int) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        try FileManager.default.setAttributes(
            [.posixPermissions: mode], ofItemAtPath: scratch.directory + "/" + directory)
        #expect(scratch.resolve() == scratch.packaged)
    }

    /// `.tokenvault` as a link to a directory of the caller's own is refused too: whoever made
    /// the link chose where it points.
    @Test func aLinkedDataDirectoryIsRefused() throws {
        let scratch = try Scratch(local: false)
        defer { scratch.remove() }
        let elsewhere = scratch.directory + "/elsewhere"
        try FileManager.default.createDirectory(
            atPath: elsewhere + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try FileManager.default.createSymbolicLink(
            atPath: scratch.directory + "/.tokenvault", withDestinationPath: elsewhere)
        #expect(scratch.resolve() == scratch.packaged)
    }

    /// Another user's `.tokenvault` (made here by changing its owner, which needs root).
    @Test(.enabled(if: geteuid() == 0, "changing a directory's owner needs root"))
    func anotherUsersDataDirectoryIsRefused() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        #expect(chown(scratch.directory + "/.tokenvault", 65534, 65534) == 0)
        #expect(scratch.resolve() == scratch.packaged)
    }
}
