import Foundation

/// One request as the server received it, kept in order so tests can check what a client sent
/// (headers, form fields, whether a token leaked into a URL).
public struct RecordedRequest: Sendable {
    public var method: String
    /// The request target without its query.
    public var path: String
    /// The request target as sent, query included.
    public var uri: String
    /// Lower-cased names; repeated headers are joined with ", ".
    public var headers: [String: String]
    public var body: [UInt8]
    /// The decoded `application/x-www-form-urlencoded` body (empty for other content types). A
    /// repeated field keeps its first value; `formFields` has them all.
    public var form: [String: String]
    /// Every form field in order, repeats included.
    public var formFields: [(name: String, value: String)]
    public var receivedAt: Date

    init(method: String, uri: String, headers: [(String, String)], body: [UInt8], receivedAt: Date) {
        self.method = method
        self.uri = uri
        path = String(uri.prefix { $0 != "?" })
        var joined: [String: String] = [:]
        for (name, value) in headers {
            let key = name.lowercased()
            joined[key] = joined[key].map { "\($0), \(value)" } ?? value
        }
        self.headers = joined
        self.body = body
        let contentType = joined["content-type"]?.lowercased() ?? ""
        formFields =
            contentType.hasPrefix("application/x-www-form-urlencoded") ? FormURLEncoding.decode(body) : []
        var form: [String: String] = [:]
        for field in formFields where form[field.name] == nil { form[field.name] = field.value }
        self.form = form
        self.receivedAt = receivedAt
    }
}
