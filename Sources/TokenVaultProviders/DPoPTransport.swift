import TokenVaultCore

/// The transport of a DPoP instance (`dpop: true`, RFC 9449): every request it posts (token
/// requests and revocations) carries a fresh proof made with the instance's key, so the provider
/// binds the tokens it issues to that key. An answer that asks for another proof (section 8's
/// `use_dpop_nonce` challenge, or `invalid_dpop_proof`) is answered once with a new proof, with
/// the nonce the server gave: the server refused such a request before looking at its grant, so
/// sending it again cannot spend a refresh token twice. Discovery documents (`GET`) go as they are.
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
            throw ProviderFailure(
                kind: .misconfigured, code: .dpopProofFailed,
                message: "no DPoP proof could be made for the request: \(error)")
        }
        let answer = try await base.send(try signed(request, session), call: call)
        session.remember(nonce: answer.headers["dpop-nonce"], from: request.url)
        guard answer.status == 400 || answer.status == 401,
            DPoPSession.asksForNewProof(error: ProviderErrorBody.parse(answer.body)?.error)
        else { return answer }
        var again = call
        again?.resend = true
        let second = try await base.send(try signed(request, session), call: again)
        session.remember(nonce: second.headers["dpop-nonce"], from: request.url)
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
                HeaderField(name: "DPoP", value: try session.proof(method: request.method, url: request.url)))
        } catch {
            throw ProviderFailure(
                kind: .misconfigured, code: .dpopProofFailed,
                message: "no DPoP proof could be made for the request: \(type(of: error))")
        }
        return signed
    }
}
