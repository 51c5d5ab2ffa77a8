import Foundation
import PackagePlugin

/// Embeds the repository's `migrations/NNNN_name.sql` files (and `migrations/postgres/`'s) into
/// the target as generated Swift,
/// so the binary carries its schema and the files at the root stay the single source.
@main
struct EmbedMigrations: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let directory = context.package.directoryURL.appending(path: "migrations")
        func sqlFiles(_ directory: URL) throws -> [URL] {
            try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "sql" }
                .sorted { $0.lastPathComponent < $1.lastPathComponent }
        }
        // SQLite's files, then PostgreSQL's (`migrations/postgres/`, numbered on their own).
        let files = try sqlFiles(directory) + sqlFiles(directory.appending(path: "postgres"))
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) migrations",
                executable: try context.tool(named: "migration-embedder").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output])
        ]
    }
}
