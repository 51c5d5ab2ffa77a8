import Foundation
import Testing
import TokenVaultSystem
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// What `HeldDirectory` refuses on a real file system: links in place of the names it opens or
/// creates, a hard link to another file, a path where a name belongs. Root's backup and restore
/// rely on each (RootBackupRestoreTests runs them end to end).
@Suite struct HeldDirectoryTests {
    let directory = TemporaryDirectory("tokenvault-held")

    @Test func aLinkIsNeverFollowedOrWrittenThrough() throws {
        let held = try HeldDirectory(directory.path)
        writeFile(directory.file("target"), Data("kept".utf8))
        symlink(directory.file("target"), directory.file("link"))
        mkdir(directory.file("real"), 0o700)
        symlink(directory.file("real"), directory.file("dirlink"))

        #expect(throws: HeldDirectory.Failure.self) { try held.openFile("link") }
        #expect(throws: HeldDirectory.Failure.self) { try held.createFile("link") }
        #expect(throws: HeldDirectory.Failure.self) { try held.subdirectory("dirlink", create: true) }
        #expect(throws: HeldDirectory.Failure.self) { try HeldDirectory(directory.file("dirlink")) }
        #expect(throws: HeldDirectory.Failure.self) { try HeldFile.create(directory.file("link")) }
        #expect(throws: HeldDirectory.Failure.self) { try HeldFile.open(directory.file("link")) }
        #expect(RawBytes.read(directory.file("target")) == Array("kept".utf8))

        try held.rename("link", to: "moved")
        var info = stat()
        #expect(lstat(directory.file("moved"), &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK)
        held.remove("moved")
        #expect(FileManager.default.fileExists(atPath: directory.file("target")))
        #expect(throws: HeldDirectory.Failure.self) { try held.createFile("../escape") }
        #expect(throws: HeldDirectory.Failure.self) { try held.openFile("..") }
    }

    @Test func aHardLinkedFileIsRefusedAndACopyGoesThroughDescriptors() throws {
        let held = try HeldDirectory(directory.path)
        writeFile(directory.file("data"), Data(repeating: 7, count: 200_000))
        link(directory.file("data"), directory.file("second-name"))
        #expect(throws: HeldDirectory.Failure.self) { try held.openFile("data") }
        unlink(directory.file("second-name"))

        let copied = try held.openFile("data").copy(to: try held.createFile("copy"))
        #expect(copied == 200_000)
        #expect(RawBytes.read(directory.file("copy")) == [UInt8](repeating: 7, count: 200_000))
        #expect(throws: HeldDirectory.Failure.self) { try held.createFile("copy") }
    }

    @Test func aScratchDirectoryIsPrivateAndRemovedWithItsFiles() throws {
        let scratch = try HeldDirectory.scratch()
        var info = stat()
        #expect(stat(scratch.path, &info) == 0 && info.st_mode & 0o777 == 0o700 && info.st_uid == geteuid())
        _ = try scratch.createFile("a")
        _ = try scratch.createFile("b")
        #expect(scratch.isSame(asPath: scratch.path + "/."))
        scratch.removeScratch()
        #expect(!FileManager.default.fileExists(atPath: scratch.path))
    }
}
