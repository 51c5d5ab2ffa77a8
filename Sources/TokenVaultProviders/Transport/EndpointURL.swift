import Foundation
import TokenVaultCore

/// A provider endpoint that passed the transport rule: HTTPS, or plain HTTP to this machine
/// only (a refresh token sent in clear text over a network is a leaked refresh token).
struct EndpointURL: Sendable, Equatable, CustomStringConvertible {
    let url: URL
    var description: String { url.absoluteString }

    /// The endpoint, or a sentence saying why `text` is not acceptable.
    static func validate(_ text: String) -> Result<EndpointURL, OptionProblem> {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            return .failure(OptionProblem("'\(text.prefix(200))' is not a URL"))
        }
        guard let host = url.host, !host.isEmpty else {
            return .failure(OptionProblem("'\(text.prefix(200))' has no host"))
        }
        guard url.user == nil, url.password == nil else {
            return .failure(OptionProblem("a URL must not carry credentials; use client_secret_file"))
        }
        guard url.fragment == nil else {
            return .failure(OptionProblem("'\(text.prefix(200))' must not have a #fragment"))
        }
        switch scheme {
        case "https":
            return .success(EndpointURL(url: url))
        case "http" where isLoopback(host):
            return .success(EndpointURL(url: url))
        case "http":
            return .failure(
                OptionProblem("'\(text.prefix(200))' uses plain http to \(host); \(UpstreamURL.plainHTTPRule)"))
        default:
            return .failure(OptionProblem("'\(text.prefix(200))' has scheme '\(scheme)'; expected https"))
        }
    }

    /// `127.0.0.0/8` and `::1` written as addresses (one rule with the proxy's, `UpstreamURL`).
    static func isLoopback(_ host: String) -> Bool { UpstreamURL.isLoopback(host) }
}

/// Why an option's value was refused, as a sentence; the caller adds the key.
struct OptionProblem: Error, Sendable, Equatable {
    var problem: String
    init(_ problem: String) { self.problem = problem }
}
