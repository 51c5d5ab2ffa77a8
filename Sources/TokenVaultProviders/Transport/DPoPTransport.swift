import TokenVaultCore

/// The transport of a DPoP instance (`dpop: true`, RFC 9449): every request it posts (token
/// requests and revocations) carries a fresh proof made with the instance's key, so the provider
/// binds the tokens it issues to that key. A nonce challenge (section 8: `use_dpop_nonce` with a
/// `DPoP-Nonce`) is answered once, with a new proof carrying that nonce: the server refused the
/// request before looking at its grant, so sending it again cannot spend a refresh token twice.
/// Nothing else is sent again: an `invalid_dpop_proof` may mean the same bytes reached the server
/// twice (a retrying intermediary), and a challenge recovered from the courier's spool belongs
/// to a request made before a restart (a recovered code exchange has no code left to send); the
/// engine's own retry, with a new attempt, answers those. Discovery documents (`GET`) go as they are.
struct DPoPTransport: ProviderTransport {
    let base: any ProviderTransport
    let sessions: DPoPSessions
    let instance: String

    func send(_ request: PreparedRequest, call: ProviderCall?) async throws(ProviderFailure) -> HTTPAnswer {
        guard request.method == "POST" else { return try await base.send(request, call: call) }
        let session: DPoPSession
        do {
            session = try sessions.session(for: instance)
        } catch {
            throw .dpopProofFailed(error)
        }
        let answer = try await base.send(try signed(request, session), call: call)
        // A recovered answer's nonce is older than any this session may have heard since.
        guard answer.sentAt == nil else { return answer }
        let nonce = answer.headers["dpop-nonce"]
        session.remember(nonce: nonce, from: .authorization, url: request.url)
        guard answer.status == 400 || answer.status == 401, nonce != nil,
            DPoPSession.isNonceChallenge(error: ProviderErrorBody.parse(answer.body)?.error)
        else { return answer }
        // Under the same courier key: the second answer replaces the challenge the courier keeps.
        let second = try await base.send(try signed(request, session), call: call)
        session.remember(nonce: second.headers["dpop-nonce"], from: .authorization, url: request.url)
        return second
    }

    func shutdown() async throws { try await base.shutdown() }

    private func signed(_ request: PreparedRequest, _ session: DPoPSession) throws(ProviderFailure)
        -> PreparedRequest
    {
        var signed = request
        do {
            signed.headers.removeAll { $0.name.lowercased() == "dpop" }
            signed.headers.append(
                HeaderField(
                    name: "DPoP",
                    value: try session.proof(for: .authorization, method: request.method, url: request.url)))
        } catch {
            throw .dpopProofFailed(error)
        }
        return signed
    }
}

extension ProviderFailure {
    /// Nothing was sent: the instance's key is not to be had (the vault's keys not open yet), or
    /// signing failed. The vault's own errors are named; anything else (the signer's) by its type.
    static func dpopProofFailed(_ error: any Error) -> ProviderFailure {
        let cause = (error as? VaultError).map { "\($0)" } ?? "\(type(of: error))"
        return ProviderFailure(
            kind: .misconfigured, code: .dpopProofFailed,
            message: "no DPoP proof could be made for the request: \(cause)")
    }
}
