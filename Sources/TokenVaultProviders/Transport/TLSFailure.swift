/// Says in words what a TLS failure means for the operator. BoringSSL names a TLS alert the
/// server sent in its error text (`TLSV1_ALERT_UNKNOWN_CA`); alerts about certificates that
/// come from the server are about *our* certificate, so with mutual TLS (Sber ID) they mean the
/// client certificate was refused, which is the one thing the operator must fix on our side.
/// The explanation leads because messages are cut at 200 characters.
enum TLSFailure {
    /// Alert reason names (as BoringSSL spells them) -> the alert's name in RFC 8446.
    private static let clientCertificateAlerts: [(reason: String, alert: String)] = [
        ("ALERT_CERTIFICATE_REQUIRED", "certificate_required"),
        ("ALERT_UNKNOWN_CA", "unknown_ca"),
        ("ALERT_BAD_CERTIFICATE", "bad_certificate"),
        ("ALERT_UNSUPPORTED_CERTIFICATE", "unsupported_certificate"),
        ("ALERT_CERTIFICATE_REVOKED", "certificate_revoked"),
        ("ALERT_CERTIFICATE_EXPIRED", "certificate_expired"),
        ("ALERT_CERTIFICATE_UNKNOWN", "certificate_unknown"),
        ("ALERT_ACCESS_DENIED", "access_denied"),
    ]

    static func explain(_ text: String) -> String {
        let upper = text.uppercased()
        if let match = clientCertificateAlerts.first(where: { upper.contains($0.reason) }) {
            let reason =
                match.alert == "certificate_required"
                ? "the server requires a client certificate and none was presented"
                : "the server refused the client certificate"
            return "TLS: \(reason) (alert \(match.alert)); check client_certificate_file and that the provider "
                + "registered this certificate. \(text)"
        }
        if upper.contains("CERTIFICATE_VERIFY_FAILED") || upper.contains("UNABLE_TO_GET_ISSUER") {
            return "TLS: the server's certificate is not trusted; set ca_file to the CA bundle that issued it "
                + "(with trust_system_roots: true to keep the system roots as well). \(text)"
        }
        if upper.contains("HOSTNAME") {
            return "TLS: the server's certificate does not name the host in the URL. \(text)"
        }
        return "TLS: \(text)"
    }
}
