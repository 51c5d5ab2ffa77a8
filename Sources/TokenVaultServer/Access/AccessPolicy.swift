/// A permission a peer needs for an operation, scoped to a namespace.
public enum Permission: String, Sendable, Codable, CaseIterable {
    case tokenRead = "token:read"
    /// Receive tokens derived from the credential's by RFC 8693 token exchange (another audience,
    /// a narrower scope), never the credential's own. `token:read` gives it too: a caller that
    /// may read the token could exchange it itself.
    case tokenExchange = "token:exchange"
    /// Have the daemon make API calls with the credential's token (the proxy) without ever
    /// seeing it. `token:read` gives it too: a caller that may read the token could make the
    /// call itself.
    case credentialUse = "credential:use"
    case credentialWrite = "credential:write"
    /// Start and finish sign-ins (`…/authorization`), whose tokens the vault stores without
    /// showing them to the caller. `credential:write` gives it too: a caller that may store any
    /// token could sign in itself and store the result.
    case credentialAuthorize = "credential:authorize"
    case credentialList = "credential:list"
    case admin
}

extension Permission {
    /// Whether a rule granting `granted` gives this permission: `admin` gives every one, and
    /// `token:read` gives `credential:use` and `token:exchange`, and `credential:write` gives
    /// `credential:authorize`.
    public func isGranted(by granted: Set<Permission>) -> Bool {
        granted.contains(self) || granted.contains(.admin)
            || ((self == .credentialUse || self == .tokenExchange) && granted.contains(.tokenRead))
            || (self == .credentialAuthorize && granted.contains(.credentialWrite))
    }
}

/// Decides who may do what, from the peer's uid and groups. Pure: no I/O, easy to test.
///
/// Default deny. The daemon's own uid and root are admins everywhere; `admin` implies every
/// other permission. A rule grants permissions in namespaces (`*` = all) to a user or a group.
public struct AccessPolicy: Sendable, Equatable {
    public struct Rule: Sendable, Equatable {
        public enum Subject: Sendable, Equatable {
            case user(UInt32)
            case group(UInt32)
        }

        public var subject: Subject
        public var namespaces: Set<String>
        public var permissions: Set<Permission>

        public init(subject: Subject, namespaces: Set<String>, permissions: Set<Permission>) {
            self.subject = subject
            self.namespaces = namespaces
            self.permissions = permissions
        }
    }

    public var rules: [Rule]
    public var daemonUID: UInt32
    /// Root is an admin (on by default; tests running as root turn it off to exercise denial).
    public var rootIsAdmin: Bool

    public init(rules: [Rule], daemonUID: UInt32, rootIsAdmin: Bool = true) {
        self.rules = rules
        self.daemonUID = daemonUID
        self.rootIsAdmin = rootIsAdmin
    }

    /// Whether a peer with `uid` and `groups` holds `permission` in `namespace`
    /// (`namespace == nil`: in every namespace, as admin operations need).
    public func allows(uid: UInt32, groups: Set<UInt32>, _ permission: Permission, in namespace: String?) -> Bool {
        if (uid == 0 && rootIsAdmin) || uid == daemonUID { return true }
        return rules.contains { rule in
            let matches: Bool =
                switch rule.subject {
                case .user(let ruleUID): ruleUID == uid
                case .group(let gid): groups.contains(gid)
                }
            guard matches, permission.isGranted(by: rule.permissions) else {
                return false
            }
            if rule.namespaces.contains("*") { return true }
            guard let namespace else { return false }
            return rule.namespaces.contains(namespace)
        }
    }

    /// Whether any rule (or admin status) gives the peer anything at all. A peer with nothing has
    /// no business holding a connection open: it is closed after its 403.
    public func grantsAnything(uid: UInt32, groups: Set<UInt32>) -> Bool {
        if (uid == 0 && rootIsAdmin) || uid == daemonUID { return true }
        return rules.contains { rule in
            switch rule.subject {
            case .user(let ruleUID): ruleUID == uid && !rule.permissions.isEmpty
            case .group(let gid): groups.contains(gid) && !rule.permissions.isEmpty
            }
        }
    }

    /// Namespaces in which the peer holds `permission`; nil means all of them.
    public func namespaces(uid: UInt32, groups: Set<UInt32>, with permission: Permission) -> Set<String>? {
        if allows(uid: uid, groups: groups, permission, in: nil) { return nil }
        var result: Set<String> = []
        for rule in rules where permission.isGranted(by: rule.permissions) {
            switch rule.subject {
            case .user(let ruleUID) where ruleUID == uid: result.formUnion(rule.namespaces)
            case .group(let gid) where groups.contains(gid): result.formUnion(rule.namespaces)
            default: continue
            }
        }
        return result
    }
}
