import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import TokenVaultCore

#if canImport(Glibc)
    import Glibc
#endif

extension ProviderErrorClassifier {
    /// Classifies a failure to get an answer at all.
    ///
    /// Before the request left (connection refused, DNS, TLS handshake, connect timeout) the
    /// provider cannot have acted on it: `.transient`. After it may have left (read timeout,
    /// connection closed before the answer, an unparsable answer) a rotating provider may already
    /// have spent the refresh token: `.unknownOutcome`. Errors that can only happen while
    /// connecting are `.transient` even when `requestSent` says otherwise.
    public static func transport(_ error: any Error, requestSent: Bool) -> ProviderFailure {
        let phase = TransportError.phase(of: error)
        if !requestSent || phase.isBeforeSending {
            let code: ProviderFailure.Code = phase == .tlsHandshake ? .tlsError : .connectionFailed
            return ProviderFailure(
                kind: .transient, code: code, message: OperatorText.clean(TransportError.describe(error)))
        }
        let code: ProviderFailure.Code =
            switch phase {
            case .timeout: .timeout
            case .dropped: .connectionDropped
            case .badResponse: .malformedResponse
            case .cancelled: .cancelled
            default: .transportError
            }
        return ProviderFailure(
            kind: .unknownOutcome, code: code,
            message: OperatorText.clean(
                "no usable answer after the request was sent: \(TransportError.describe(error))"))
    }
}

/// Where in a request's life an AsyncHTTPClient / SwiftNIO error happened, read off its type
/// (AsyncHTTPClient 1.37 sources: `HTTPClientError`, the pool's connection errors, NIOSSL).
enum TransportError {
    enum Phase: Equatable {
        case connecting
        case tlsHandshake
        /// Sent, no answer in time (`readTimeout`, `writeTimeout`, `deadlineExceeded`).
        case timeout
        /// The connection closed or reset before a complete answer.
        case dropped
        /// Bytes came back that are not HTTP.
        case badResponse
        case cancelled
        /// Anything else: assume the request may have left.
        case unknown

        var isBeforeSending: Bool { self == .connecting || self == .tlsHandshake }
    }

    /// The pool only hands a request to a connection once it is established (with
    /// `retryConnectionEstablishment` off it fails the request with the connect error), so
    /// every connect-time error below means nothing was sent.
    static func phase(of error: any Error) -> Phase {
        switch error {
        case is NIOConnectionError:
            return .connecting
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout, .getConnectionFromPoolTimeout, .socksHandshakeTimeout, .httpProxyHandshakeTimeout,
                .invalidURL, .emptyHost, .emptyScheme, .alreadyShutdown, .invalidProxyResponse,
                .proxyAuthenticationRequired:
                return .connecting
            case .tlsHandshakeTimeout:
                return .tlsHandshake
            case .readTimeout, .writeTimeout, .deadlineExceeded:
                return .timeout
            case .remoteConnectionClosed:
                return .dropped
            case .cancelled:
                return .cancelled
            default:
                return .unknown
            }
        case let error as ChannelError:
            switch error {
            case .connectTimeout, .connectPending: return .connecting
            case .eof, .ioOnClosedChannel, .alreadyClosed, .inputClosed, .outputClosed: return .dropped
            default: return .unknown
            }
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL, ENETDOWN: return .connecting
            case ECONNRESET, EPIPE, ECONNABORTED: return .dropped
            default: return .unknown
            }
        case let error as NIOSSLError:
            switch error {
            case .uncleanShutdown, .shutdownFailed: return .dropped
            default: return .tlsHandshake
            }
        case is NIOSSLExtraError, is BoringSSLError:
            return .tlsHandshake
        case is HTTPParserError:
            return .badResponse
        case is CancellationError:
            return .cancelled
        default:
            return .unknown
        }
    }

    /// A short account of the error for operators. None of these types carries request data.
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as NIOConnectionError:
            return "could not connect to \(error.host):\(error.port): \(error)"
        case let error as HTTPClientError:
            return error.shortDescription
        case is NIOSSLError, is NIOSSLExtraError, is BoringSSLError:
            return TLSFailure.explain(String(describing: error))
        default:
            return String(describing: error)
        }
    }
}
