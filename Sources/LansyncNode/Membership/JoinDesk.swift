import Foundation
import LansyncCore
import LansyncIdentity
import LansyncReplica
import LansyncTransport
import LansyncWire
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Where a node answers machines that join with an invite (Docs/SECURITY.md, Docs/PROTOCOL.md
/// "Joining"). Only a node that holds the cluster authority's key admits anyone; every other node
/// refuses at once, saying where to ask.
///
/// A request is granted when its proof was made with the secret of one of this machine's
/// invites, and that invite is unused and unexpired; granting it uses the invite in the same
/// transaction, so one code admits one machine. The private key never travels: the joiner sends
/// its public key, and gets back the certificate this authority issued for it.
final class JoinDesk: Sendable {
    let store: any ReplicaStorage
    let io: BlockingIO
    /// This node, which signs the admissions it grants as their maker.
    let me: NodeID
    /// Where an admission goes, to travel to every member.
    let statements: ClusterStatements
    private let authority: NIOLockedValueBox<ClusterSecret?>
    let logger: Logger
    private let active = NIOLockedValueBox(0)
    /// When the last "closed: too many" line was logged (Unix ms): one a minute at most, so a
    /// flood of certificate-less connections cannot fill the log.
    private let lastBusyLine = NIOLockedValueBox<UInt64>(0)
    /// Connections without a certificate served at once, waiting for their request included; more
    /// are closed at once (a join is rare, and strangers' connections must not hold the node's
    /// memory or time).
    static let maxActive = 8
    /// How long a joiner has to send its request.
    static let requestTimeout: Duration = .seconds(10)
    /// The lines join requests cause (anyone can send one): once a minute per address, 30 a
    /// minute in all.
    private let lines = LogGate(perSource: 1, perMinute: 30)

    /// Logs a line a join request caused, within ``lines``.
    private func log(_ level: Logger.Level, _ text: String, from address: String) {
        // The address without its port: each connection comes from another one.
        let source = address.lastIndex(of: ":").map { String(address[..<$0]) } ?? address
        let budget = lines.take(source: source)
        guard budget != .drop else { return }
        logger.log(level: level, "\(text)\(budget.note)")
    }

    init(
        store: any ReplicaStorage,
        io: BlockingIO,
        me: NodeID,
        statements: ClusterStatements,
        admitting: ClusterSecret?,
        logger: Logger
    ) {
        self.store = store
        self.io = io
        self.me = me
        self.statements = statements
        authority = NIOLockedValueBox(admitting)
        self.logger = logger
    }

    /// Whether this node admits others now.
    var isAdmitting: Bool { authority.withLockedValue { $0 != nil } }

    /// Admits no one from now on (the machine left the set of admitting machines).
    func retire() { authority.withLockedValue { $0 = nil } }

    /// Reads one join request from `connection`, answers it, and closes the connection.
    func serve(_ connection: JoinerConnection) async {
        let admitted = active.withLockedValue { count -> Bool in
            guard count < Self.maxActive else { return false }
            count += 1
            return true
        }
        defer { if admitted { active.withLockedValue { $0 -= 1 } } }
        guard admitted else {
            let now = WallClock.milliseconds
            let due = lastBusyLine.withLockedValue { last -> Bool in
                guard now >= last + 60_000 else { return false }
                last = now
                return true
            }
            if due {
                logger.warning(
                    "closing connections without a certificate (from \(connection.remoteAddress) and others): \(Self.maxActive) are being served; this line comes at most once a minute"
                )
            }
            try? await connection.channel.executeThenClose { _, _ in }
            return
        }
        try? await connection.channel.executeThenClose { inbound, outbound in
            let first = await withTaskGroup(of: Incoming?.self) { race -> Incoming? in
                race.addTask {
                    var messages = inbound.makeAsyncIterator()
                    return try? await messages.next()
                }
                race.addTask {
                    try? await Task.sleep(for: Self.requestTimeout)
                    return nil
                }
                let first = await race.next() ?? nil
                race.cancelAll()
                return first
            }
            guard case .message(.joinRequest(let request))? = first else {
                // Not a joiner of ours (a stranger without a certificate, or a slow one): nothing to answer.
                return
            }
            try await outbound.write(await self.answer(request, from: connection.remoteAddress))
        }
    }

    private func answer(_ request: JoinRequest, from address: String) async -> Message {
        guard let admitting = authority.withLockedValue({ $0 }) else {
            log(.warning, "join refused (\(address)): this machine cannot admit others", from: address)
            return .error(
                ProtocolError(
                    .joinRefused,
                    "this machine cannot admit others (it does not hold the cluster's authority key): use a code from a machine that can"
                )
            )
        }
        // Before the invite is used: a name every member will print must be a plain one.
        if !request.name.isEmpty, let problem = MachineName.problem(with: request.name) {
            log(.warning, "join refused (\(address)): its name is not valid (\(problem))", from: address)
            return .error(
                ProtocolError(.joinRefused, "the name is refused (\(problem)): join again with another --name")
            )
        }
        let node: NodeID
        do { node = try Identity.nodeID(ofPublicKeyDER: request.publicKey) } catch {
            return .error(ProtocolError(.joinRefused, "the request's public key is not a P-256 key"))
        }
        let now = WallClock.milliseconds
        let outcome: InviteRedemption
        do {
            outcome = try await io.write { [store] in
                try store.redeemInvite(now: now, by: node) { secret in
                    InviteCode.verify(
                        proof: request.proof,
                        secret: secret,
                        publicKey: request.publicKey,
                        name: request.name
                    )
                }
            }
        } catch {
            log(.info, "join from \(address) not answered: \(error)", from: address)
            return .error(ProtocolError(.storage, "the inviter could not record the join; try again"))
        }
        guard case .admitted(let invite) = outcome else { return refusal(outcome, from: address) }
        return await admit(node, request, invite: invite, at: now, from: address, authority: admitting)
    }

    /// Certifies the joining machine, and tells every member who let it in.
    private func admit(
        _ node: NodeID,
        _ request: JoinRequest,
        invite: InviteRecord,
        at now: UInt64,
        from address: String,
        authority admitting: ClusterSecret
    ) async -> Message {
        do {
            let name = request.name.isEmpty ? invite.name ?? "" : request.name
            let accepted = JoinAccepted(
                certificate: try admitting.issueCertificate(forPublicKeyDER: request.publicKey),
                authority: try admitting.trust.der(),
                name: name
            )
            logger.notice(
                "admitted node \(node.short) (\(name.isEmpty ? "unnamed" : name)) from \(address) with an invite"
            )
            // Every member learns who let it in (in the hellos, like a revocation).
            if let admission = try? Admission.make(node: node, name: name, at: now, by: me, authority: admitting) {
                await statements.add(.admission(admission))
            }
            return .joinAccepted(accepted)
        } catch {
            logger.error("join from \(address): cannot issue a certificate: \(error)")
            return .error(ProtocolError(.storage, "the inviter could not issue a certificate"))
        }
    }

    /// The answer to a code that admits nobody: no such invite, used, or expired.
    private func refusal(_ outcome: InviteRedemption, from address: String) -> Message {
        let (logged, told): (String, String)
        switch outcome {
        case .admitted:
            return .error(ProtocolError(.joinRefused, "the invite was admitted"))
        case .unknown:
            logged = "no invite of this machine matches the code"
            told =
                "this machine issued no such invite: check that the code comes from this machine, or ask for a new one"
        case .used(let at):
            logged = "the invite was already used"
            told = "this invite was already used (\(Self.time(at))): a code admits one machine; ask for a new one"
        case .expired(let at):
            logged = "the invite expired"
            told = "this invite expired (\(Self.time(at))): ask for a new one"
        }
        log(.warning, "join refused (\(address)): \(logged)", from: address)
        return .error(ProtocolError(.joinRefused, told))
    }

    static func time(_ ms: UInt64) -> String { WallClock.iso8601(milliseconds: ms) }
}
