import Foundation

/// A small HTTP/1.1 client for tests of the test server itself, and of anything else on
/// loopback: one request per connection, form bodies, Basic auth. Built on NIO like the server,
/// because URLSession is unreliable on Linux and test targets may not import AsyncHTTPClient.
/// A connection the server closed without answering is reported as its own error,
/// `TestHTTPClientError.closedWithoutResponse`, distinct from refused, timed out and malformed.
public enum TestHTTPClient {
    /// POSTs `form` as `application/x-www-form-urlencoded`, with HTTP Basic credentials when given.
    public static func postForm(
        _ url: String, _ form: [String: String], basicAuth: (user: String, password: String)? = nil,
        headers: [String: String] = [:], timeout: Double = 10
    ) async throws -> TestHTTPResponse {
        var headers = headers
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        if let basicAuth {
            headers["Authorization"] = basicAuthorization(user: basicAuth.user, password: basicAuth.password)
        }
        return try await request(
            "POST", url, headers: headers, body: Array(FormURLEncoding.encode(form).utf8), timeout: timeout)
    }

    /// One request on a connection of its own (`Connection: close`).
    public static func request(
        _ method: String, _ url: String, headers: [String: String] = [:], body: [UInt8] = [], timeout: Double = 10
    ) async throws -> TestHTTPResponse {
        guard let parsed = URL(string: url), parsed.scheme == "http", let host = parsed.host, let port = parsed.port
        else { throw TestHTTPClientError.invalidURL(url) }
        var target = parsed.path.isEmpty ? "/" : parsed.path
        if let query = parsed.query { target += "?" + query }
        let connection = try await TestHTTPConnection.connect(host: host, port: port, timeout: timeout)
        var headers = headers
        headers["Connection"] = "close"
        do {
            let response = try await connection.send(method, target, headers: headers, body: body, timeout: timeout)
            await connection.close()
            return response
        } catch {
            await connection.close()
            throw error
        }
    }

    /// `Basic base64(id:secret)`, each part form-encoded first (RFC 6749 2.3.1).
    public static func basicAuthorization(user: String, password: String) -> String {
        let pair = FormURLEncoding.encode(user) + ":" + FormURLEncoding.encode(password)
        return "Basic " + Data(pair.utf8).base64EncodedString()
    }
}

/// A response as received.
public struct TestHTTPResponse: Sendable {
    public var status: Int
    /// Lower-cased names; repeated headers are joined with ", ".
    public var headers: [String: String]
    public var body: [UInt8]

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object, nil if it is not one.
    public var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }

    /// The `error` of a JSON error body.
    public var errorCode: String? { json?["error"] as? String }
}

public enum TestHTTPClientError: Error, Equatable, CustomStringConvertible {
    case invalidURL(String)
    /// The TCP connection could not be made (refused while the server is offline).
    case connectionFailed(String)
    /// The server closed the connection before a complete response.
    case closedWithoutResponse
    /// No complete response within the timeout; the connection was closed.
    case timedOut
    /// Bytes came that are not an HTTP response.
    case malformedResponse(String)

    public var description: String {
        switch self {
        case .invalidURL(let url): return "invalid URL \(url)"
        case .connectionFailed(let reason): return "connection failed: \(reason)"
        case .closedWithoutResponse: return "connection closed without response"
        case .timedOut: return "timed out"
        case .malformedResponse(let reason): return "malformed response: \(reason)"
        }
    }
}
