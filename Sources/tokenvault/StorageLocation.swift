import TokenVaultCore

/// Where a vault's database is, as `migrate-store` names it: `sqlite:PATH` (a vault.db file) or a
/// PostgreSQL URL (`postgres://USER@HOST/DATABASE?...`, never with a password).
enum StorageLocation: CustomStringConvertible {
    case sqlite(String)
    case postgres(String)

    init(argument: String, option: String) throws {
        if argument.hasPrefix("sqlite:"), argument.count > "sqlite:".count {
            self = .sqlite(String(argument.dropFirst("sqlite:".count)))
        } else if argument.hasPrefix("postgres://") || argument.hasPrefix("postgresql://") {
            self = .postgres(argument)
        } else {
            throw VaultError.invalidField(
                option, "expected sqlite:PATH (a vault.db file) or postgres://USER@HOST/DATABASE")
        }
    }

    var description: String {
        switch self {
        case .sqlite(let path): "sqlite:" + path
        case .postgres(let url): url
        }
    }
}
