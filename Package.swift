// swift-tools-version: 6.1
import PackageDescription

/// The dependency rule (docs/architecture.md, "Modules"; `ModuleRuleTests` checks every source
/// file's imports against it): Core imports nothing of the project and no library (Foundation,
/// Dispatch, Synchronization and the C library only). Ledger imports Core. System imports Core;
/// Crypto imports Core and System and alone imports libsodium and swift-crypto; Storage imports
/// Core and alone imports the database drivers. Providers imports Core and System; Engine imports
/// Core and Ledger; Server imports Core, Ledger, System and Providers; Courier imports Core,
/// System, Crypto and Providers; Client imports nothing of the project. The executables wire them
/// and may import any of them.
let package = Package(
    name: "TokenVault",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tokenvault", targets: ["tokenvault"]),
        .executable(name: "tokenvault-mcp", targets: ["tokenvault-mcp"]),
        .library(name: "TokenVaultCore", targets: ["TokenVaultCore"]),
        .library(name: "TokenVaultClient", targets: ["TokenVaultClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/modelcontextprotocol/swift-sdk", exact: "0.12.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        // System libraries, reached through pkg-config.
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CSodium", pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),
        // Fixed-argument wrappers for variadic libc calls (prctl).
        .systemLibrary(name: "CProcess"),

        // The domain (credentials, secrets in memory, errors, rules, the protocols of storage and
        // sealing): no I/O, no sleeping, no executors; no networking, driver or library.
        .target(name: "TokenVaultCore"),
        // The ledger (`Vault`): the one way to read or write a credential, over Core's storage and
        // sealing protocols; the vault's writes, held commits and their retries, write coalescing,
        // the webhook outbox's routing, key rotation, and the executor its store calls run on.
        .target(name: "TokenVaultLedger", dependencies: ["TokenVaultCore"]),
        // POSIX helpers every module that touches secret files or the process itself shares:
        // private files opened and checked one way, core dumps off. A platform layer, like the
        // C targets: it depends on Core only (for SecretBytes), and nothing here is domain logic.
        .target(name: "TokenVaultSystem", dependencies: ["TokenVaultCore", "CProcess"]),
        // The only importer of libsodium: envelope, keyring, KDF; and of swift-crypto: P-256 (DPoP
        // proofs, client assertions) and RSA, which libsodium lacks, and JOSE's Ed25519 and HMAC
        // with them, so id-token signatures are checked by one library.
        .target(
            name: "TokenVaultCrypto",
            dependencies: [
                "TokenVaultCore", "TokenVaultSystem", "CSodium", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]),
        // The only importer of the database drivers (SQLite, PostgreSQL): connections, migrations,
        // queries, the change feed between nodes. Sees ciphertext only.
        .target(
            name: "TokenVaultStorage",
            dependencies: [
                "TokenVaultCore", "CSQLite",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            plugins: ["EmbedMigrations"]),

        // HTTP/JSON over a Unix socket, peer-credential authorisation, routes.
        .target(
            name: "TokenVaultServer",
            dependencies: [
                "TokenVaultCore", "TokenVaultLedger", "TokenVaultSystem", "TokenVaultProviders",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]),

        // OAuth clients per provider kind, over AsyncHTTPClient. Implements Core's TokenProvider.
        .target(
            name: "TokenVaultProviders",
            dependencies: [
                "TokenVaultCore", "TokenVaultSystem",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),

        // The refresh engine: scheduler, single flight, journal, provider pacing. Talks to
        // storage and providers only through Core protocols (wired by the executable).
        .target(
            name: "TokenVaultEngine",
            dependencies: [
                "TokenVaultCore", "TokenVaultLedger",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        // Swift client for other processes (and the CLI): async/await over the Unix socket.
        .target(
            name: "TokenVaultClient",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ]),

        // The courier: the process that makes provider calls for the daemon and spools answers the
        // daemon did not live to commit (sealed to the spool key), and the daemon's side of it.
        .target(
            name: "TokenVaultCourier",
            dependencies: [
                "TokenVaultCore", "TokenVaultCrypto", "TokenVaultProviders", "TokenVaultSystem",
                .product(name: "Logging", package: "swift-log"),
            ]),

        // Build-time embedding of migrations/*.sql into TokenVaultStorage.
        .executableTarget(name: "migration-embedder", path: "Plugins/MigrationEmbedderTool"),
        .plugin(
            name: "EmbedMigrations", capability: .buildTool(),
            dependencies: ["migration-embedder"]),

        // The command-line tool: argument parsing and wiring only.
        .executableTarget(
            name: "tokenvault",
            dependencies: [
                "TokenVaultCore", "TokenVaultLedger", "TokenVaultCrypto", "TokenVaultStorage", "TokenVaultServer",
                "TokenVaultClient",
                "TokenVaultProviders", "TokenVaultEngine", "TokenVaultSystem", "TokenVaultCourier",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),

        // The MCP server that `tokenvault mcp` runs: a binary of its own, so that the daemon does
        // not load the MCP library's FoundationNetworking (and libcurl with it).
        .executableTarget(
            name: "tokenvault-mcp",
            dependencies: [
                "TokenVaultClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MCP", package: "swift-sdk"),
            ]),

        // Measurements recorded in docs/benchmarks.md. Imports the C libraries directly
        // only to print the raw reference line next to our wrappers.
        .executableTarget(
            name: "tokenvault-bench",
            dependencies: [
                "TokenVaultCore", "TokenVaultLedger", "TokenVaultCrypto", "TokenVaultStorage", "CSodium", "CSQLite",
                "BenchmarkSupport",
            ],
            path: "Benchmarks/tokenvault-bench"),

        // Load generator for the socket API (docs/benchmarks.md): keep-alive connections,
        // latency percentiles from HdrHistogram.
        .executableTarget(
            name: "tokenvault-loadgen",
            dependencies: [
                "TokenVaultCore", "TokenVaultLedger", "TokenVaultCrypto", "TokenVaultStorage", "BenchmarkSupport",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Benchmarks/tokenvault-loadgen"),

        // Refresh engine benchmark (docs/benchmarks.md): start-up and memory with a million
        // credentials, sustained durable refreshes against the loopback test provider.
        .executableTarget(
            name: "tokenvault-refreshbench",
            dependencies: [
                "TokenVaultCore", "TokenVaultLedger", "TokenVaultCrypto", "TokenVaultStorage", "TokenVaultEngine",
                "TokenVaultProviders",
                "TokenVaultServer", "TokenVaultTesting", "BenchmarkSupport", "TokenVaultCourier",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Benchmarks/tokenvault-refreshbench"),

        // What the benchmark executables share: argument parsing, a seeded random generator.
        .target(name: "BenchmarkSupport", path: "Benchmarks/BenchmarkSupport"),

        // Shared test helpers: fake clock, temporary vaults, byte search, the loopback OAuth
        // test provider, the in-process test server.
        .target(
            name: "TokenVaultTesting",
            dependencies: [
                "TokenVaultCore", "TokenVaultLedger", "TokenVaultCrypto", "TokenVaultStorage", "TokenVaultSystem",
                "TokenVaultServer",
                "TokenVaultProviders",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/TokenVaultTesting"),

        .testTarget(
            name: "TokenVaultCoreTests",
            dependencies: ["TokenVaultCore", "TokenVaultLedger", "TokenVaultCrypto", "TokenVaultTesting"]),
        .testTarget(
            name: "TokenVaultCryptoTests",
            dependencies: [
                "TokenVaultCrypto", "TokenVaultCore", "TokenVaultTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "TokenVaultStorageTests",
            dependencies: [
                "TokenVaultStorage", "TokenVaultCore", "TokenVaultLedger", "TokenVaultCrypto", "TokenVaultTesting",
                "CSQLite",
            ]),
        .testTarget(
            name: "TokenVaultProvidersTests",
            dependencies: [
                "TokenVaultProviders", "TokenVaultCore", "TokenVaultCrypto", "TokenVaultTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        .testTarget(
            name: "TokenVaultEngineTests",
            dependencies: [
                "TokenVaultEngine", "TokenVaultProviders", "TokenVaultCore", "TokenVaultLedger", "TokenVaultStorage",
                "TokenVaultCrypto",
                "TokenVaultTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(
            name: "TokenVaultServerTests",
            dependencies: [
                "TokenVaultServer", "TokenVaultTesting", "TokenVaultProviders", "TokenVaultSystem", "TokenVaultEngine",
                "TokenVaultCore", "TokenVaultLedger", "TokenVaultCrypto", "TokenVaultStorage",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ]),
        .testTarget(
            name: "TokenVaultClientTests",
            dependencies: [
                "TokenVaultClient", "TokenVaultServer", "TokenVaultTesting", "TokenVaultCore", "TokenVaultLedger",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // Generated input, bounded per run (TOKENVAULT_FUZZ_COUNT), after a checked-in seed
        // corpus: the payload decoder, the provider response reader, Retry-After, and the fast
        // path's HTTP framing against NIO's decoder.
        .testTarget(
            name: "TokenVaultFuzzTests",
            dependencies: [
                "TokenVaultCore", "TokenVaultLedger", "TokenVaultProviders", "TokenVaultServer",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            exclude: ["Corpus"]),
        .testTarget(
            name: "TokenVaultCourierTests",
            dependencies: [
                "TokenVaultCourier", "TokenVaultCore", "TokenVaultLedger", "TokenVaultCrypto", "TokenVaultProviders",
                "TokenVaultTesting",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The built binary, run as a user would (`make test` runs these after the in-process tests).
        .testTarget(
            name: "TokenVaultEndToEndTests",
            dependencies: [
                "TokenVaultTesting", "TokenVaultStorage", "TokenVaultCrypto", "TokenVaultSystem",
                // PackagingTests reads the Prometheus alert rules.
                .product(name: "Yams", package: "Yams"),
            ]),
        // Every suite that starts a PostgreSQL server, in-process or through the built binary: a
        // phase of its own in `make test` (`TestPostgres` refuses a suite of another target).
        .testTarget(
            name: "TokenVaultPostgresTests",
            dependencies: [
                "TokenVaultTesting", "TokenVaultStorage", "TokenVaultCore", "TokenVaultLedger", "TokenVaultCrypto",
            ]),
        // Crashes, soaks and key operations under load through the built binary: each loads both
        // cores for up to a minute, so `make test` runs them last, the soak alone.
        .testTarget(
            name: "TokenVaultResilienceTests",
            dependencies: ["TokenVaultTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
