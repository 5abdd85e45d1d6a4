import Crypto
import LansyncCore
import LansyncIdentity
import LansyncReplica
import NIOConcurrencyHelpers

/// The cluster statements a node holds (revocations with their write cuts, the latest set of
/// admitting machines, the members' roles), in memory for the checks every session makes and in the replica (table
/// `statement`) across restarts. Only statements the cluster's authority signed are ever kept: a
/// peer's forged or damaged ones are dropped.
final class ClusterStatements: Sendable {
    /// What a reading or a peer's hello brought that this node did not hold.
    struct News: Sendable {
        var revocations: [Revocation] = []
        /// A set of admitting machines newer than the one held.
        var admitters: AdmitterSet?
        /// The writes revocations refuse changed (a cut is complete now): what the replica holds
        /// must be checked against ``ClusterStatements/revokedWriters``.
        var cutsChanged = false
        /// Machines whose admission is new here (kept, and passed on; nothing to act on).
        var admissions: [Admission] = []
        /// Collection settings newer than the ones held.
        var settings: ClusterSettings?
        /// Role statements complete now that were the latest of their member when taken (a
        /// batch may hold several of one member: ``ClusterStatements/role(of:)`` is the latest).
        var roles: [RoleStatement] = []
        /// The signed-writes setting that counts changed (``ClusterStatements/signedWrites``).
        var signedWrites = false
        var isEmpty: Bool {
            revocations.isEmpty && admitters == nil && !cutsChanged && admissions.isEmpty && settings == nil
                && roles.isEmpty && !signedWrites
        }
    }

    private struct Held {
        /// Each revoked node's first revocation (for the refusal's words).
        var revoked: [NodeID: Revocation] = [:]
        /// Every revocation statement, by its key: what hellos carry on.
        var revocationRecords: [[UInt8]: [UInt8]] = [:]
        /// The parts of each cut held so far, by ``Revocation/cutID``.
        var cutParts: [[UInt8]: [Int: Revocation]] = [:]
        var admitters: AdmitterSet?
        /// Each admitted machine's first admission, in its binary form.
        var admissions: [NodeID: [UInt8]] = [:]
        var settings: ClusterSettings?
        /// Every role statement (each part), by its key: what hellos carry on.
        var roleRecords: [[UInt8]: [UInt8]] = [:]
        /// The parts of each role statement held so far, by ``RoleStatement/statementID``.
        var roleParts: [[UInt8]: [Int: RoleStatement]] = [:]
        /// Each member's latest complete role statement.
        var roles: [NodeID: RoleStatement] = [:]
        /// Every signed-writes statement (each part), by its key: what hellos carry on.
        var signedWritesRecords: [[UInt8]: [UInt8]] = [:]
        var signedWritesParts: [SignedWritesStatement] = []
        /// The signed-writes statement that counts, with its whole cut.
        var signedWrites: (statement: SignedWritesStatement, cut: [NodeID: UInt64])?
        var writers = RevokedWriters()
    }

    let store: any ReplicaStorage
    let io: BlockingIO
    let trust: ClusterCertificate
    /// This node: its own reader cut is not applied to its own replica (the overrule would be a
    /// write of its own past the cut, refused in turn); the other members' overrules reach it.
    let own: NodeID
    private let held = NIOLockedValueBox(Held())
    /// The digests of the binary forms already judged (held, or refused), so that a record is
    /// verified once: every hello and every nudge brings them all again. Digests, not the records
    /// (up to 4 KiB each, and any member may send thousands of made-up ones), and at most
    /// ``maxSeen`` of them: about 3 MiB whatever peers send. When full it starts over, which costs
    /// only verifying again.
    private let seen = NIOLockedValueBox<Set<SHA256Digest>>([])
    static let maxSeen = 65_536

    init(store: any ReplicaStorage, io: BlockingIO, trust: ClusterCertificate, own: NodeID) {
        self.store = store
        self.io = io
        self.trust = trust
        self.own = own
        members = CertifiedKeys(authority: trust)
    }

    /// The members' keys the authority certified, as far as batches showed them: a signed run
    /// holds only with one (Docs/SECURITY.md, "Signed writes").
    let members: CertifiedKeys

    /// Whether a signed run's key is a member's (``LansyncReplica/RunCheck/Certify``).
    var certify: RunCheck.Certify { { [members] in members.certifies($0, by: $1) } }

    /// The revocation of `node`, if it was revoked.
    func revocation(of node: NodeID) -> Revocation? { held.withLockedValue { $0.revoked[node] } }

    /// The latest set of admitting machines, if one was ever made.
    var admitters: AdmitterSet? { held.withLockedValue { $0.admitters } }

    /// `node`'s latest role statement, if one was ever made (a member without one is a writer).
    func role(of node: NodeID) -> RoleStatement? { held.withLockedValue { $0.roles[node] } }

    /// The writes the revocations and reader roles held refuse: each revoked node's, and each
    /// reader's, after its cut (once every part of the cut is held); and whether writes must be
    /// signed past a point (``RevokedWriters/signatures``).
    var revokedWriters: RevokedWriters { held.withLockedValue { $0.writers } }

    /// The signed-writes statement that counts, if one was ever made complete here (its `off`
    /// included).
    var signedWrites: SignedWritesStatement? { held.withLockedValue { $0.signedWrites?.statement } }

    /// What a hello carries: every revocation (each part of each cut), the latest admitter set,
    /// every admission, the settings, and every role statement (each part).
    var records: [[UInt8]] {
        held.withLockedValue { held in
            let byKey = { (records: [[UInt8]: [UInt8]]) -> [[UInt8]] in
                records.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map(\.value)
            }
            var records = byKey(held.revocationRecords)
            if let admitters = held.admitters { records.append(ClusterStatement.admitters(admitters).encoded) }
            records += held.admissions.sorted { $0.key < $1.key }.map(\.value)
            if let settings = held.settings { records.append(ClusterStatement.settings(settings).encoded) }
            records += byKey(held.roleRecords)
            records += byKey(held.signedWritesRecords)
            return records
        }
    }

    /// Keeps a statement this node made itself (an admission, when its join desk lets a machine
    /// in), in the replica and for the next hellos.
    func add(_ statement: ClusterStatement) async {
        _ = adopt([statement])
        let store = self.store
        _ = try? await io.write { try store.addStatements([(statement.key, statement.encoded)]) }
    }

    /// Whether this node holds an urgent statement (a revocation, an admitter set, settings:
    /// what ``Node/statementsLearned(_:)`` reopens sessions for; admissions wait for the next
    /// session) that neither its hello (`told`) nor the peer's (`peerHolds`) carried: one
    /// learned while the session started, which the peer may lack.
    func lacks(told: [[UInt8]], peerHolds: [[UInt8]]) -> Bool {
        let now = records
        guard now != told else { return false }
        let known = Set(told).union(peerHolds)
        return now.contains { $0.first != Self.admissionKind && !known.contains($0) }
    }

    /// The kind byte of an admission (``ClusterStatement/encoded``).
    static let admissionKind: UInt8 = 4

    /// Reads what the replica holds (at start, and after `lansync revoke` or `cluster admitters`
    /// nudged the node); returns what is new to this node.
    func reload() async -> News {
        let store = self.store
        guard let records = try? await io.run({ try store.statementRecords() }) else { return News() }
        let news = adopt(valid(records))
        await keepSettings(news)
        await keepOwnRole(news)
        return news
    }

    /// This node's latest role becomes its replica's (``ReplicaStorage/setReadOnly(_:retiring:)``):
    /// a reader's refuses local edits, saying why; otherwise the replica may write, under a
    /// writer no reader cut of this node names (a node offline for the whole time it was a
    /// reader never refused an edit, and must not go on with the writer the cut ends).
    private func keepOwnRole(_ news: News) async {
        guard news.roles.contains(where: { $0.node == own }) || news.cutsChanged else { return }
        let (role, cut) = held.withLockedValue { held in
            (held.roles[own], Self.readerCuts(held.roleParts)[own].map { Set($0.keys) } ?? [])
        }
        guard let role else { return }
        let why: String? =
            role.role == .reader
            ? "made a reader at \(WallClock.iso8601(milliseconds: role.at)) by \(role.by.short)" : nil
        let store = self.store
        _ = try? await io.write { try store.setReadOnly(why, retiring: cut) }
    }

    /// Newer collection settings become the replica's (meta `trash_window`, `away_after`), which
    /// every command and collection round reads.
    private func keepSettings(_ news: News) async {
        guard let settings = news.settings else { return }
        let store = self.store
        _ = try? await io.write {
            try store.setCollectionSettings(
                CollectionSettings(trashWindow: settings.trashWindow, awayAfter: settings.awayAfter)
            )
        }
    }

    /// Keeps the valid statements among a peer's, in memory and in the replica; returns the news.
    func learn(_ records: [[UInt8]]) async -> News {
        let statements = valid(records)
        let news = adopt(statements)
        guard !news.isEmpty else { return news }
        let store = self.store
        _ = try? await io.write { try store.addStatements(statements.map { ($0.key, $0.encoded) }) }
        await keepSettings(news)
        await keepOwnRole(news)
        return news
    }

    private func valid(_ records: [[UInt8]]) -> [ClusterStatement] {
        let unseen = seen.withLockedValue { seen in
            records.filter { record in
                if seen.count >= Self.maxSeen { seen.removeAll(keepingCapacity: true) }
                return seen.insert(SHA256.hash(data: record)).inserted
            }
        }
        return unseen.compactMap(ClusterStatement.init(encoded:)).filter { $0.isSigned(by: trust) }
    }

    private func adopt(_ statements: [ClusterStatement]) -> News {
        held.withLockedValue { held in
            var news = News()
            for statement in statements {
                switch statement {
                case .revocation(let revocation):
                    guard held.revocationRecords[statement.key] == nil else { continue }
                    held.revocationRecords[statement.key] = statement.encoded
                    if held.revoked[revocation.node] == nil {
                        held.revoked[revocation.node] = revocation
                        news.revocations.append(revocation)
                    }
                    if let cut = revocation.cut {
                        held.cutParts[revocation.cutID, default: [:]][cut.part] = revocation
                        news.cutsChanged = news.cutsChanged || held.cutParts[revocation.cutID]?.count == cut.parts
                    }
                case .admitters(let set):
                    guard set.supersedes(held.admitters) else { continue }
                    held.admitters = set
                    news.admitters = set
                case .admission(let admission):
                    // Nothing to act on: it only tells people who let a member in.
                    guard held.admissions[admission.node] == nil else { continue }
                    held.admissions[admission.node] = statement.encoded
                    news.admissions.append(admission)
                case .settings(let settings):
                    guard settings.supersedes(held.settings) else { continue }
                    held.settings = settings
                    news.settings = settings
                case .role(let role):
                    guard held.roleRecords[statement.key] == nil else { continue }
                    held.roleRecords[statement.key] = statement.encoded
                    held.roleParts[role.statementID, default: [:]][role.cut.part] = role
                    guard let parts = held.roleParts[role.statementID], parts.count == role.cut.parts,
                        (0..<role.cut.parts).allSatisfy({ parts[$0] != nil })
                    else { continue }
                    // Complete now: its reader cut counts whether or not it is the latest.
                    news.cutsChanged = news.cutsChanged || role.role == .reader
                    guard role.supersedes(held.roles[role.node]) else { continue }
                    let was = held.roles[role.node]?.role ?? .writer
                    held.roles[role.node] = role
                    news.roles.append(role)
                    news.cutsChanged = news.cutsChanged || (was == .reader) != (role.role == .reader)
                case .signedWrites(let rule):
                    guard held.signedWritesRecords[statement.key] == nil else { continue }
                    held.signedWritesRecords[statement.key] = statement.encoded
                    held.signedWritesParts.append(rule)
                    let latest = SignedWritesStatement.latest(held.signedWritesParts)
                    guard latest?.statement != held.signedWrites?.statement else { continue }
                    held.signedWrites = latest
                    news.signedWrites = true
                }
            }
            if news.cutsChanged || news.signedWrites { held.writers = Self.writers(held, own: own) }
            return news
        }
    }

    /// The complete cuts, as ``RevokedWriters``: a cut counts once every part is held. Two
    /// admitting machines may each have revoked a node: their cuts join (a write either kept
    /// stays), so every member refuses the same writes whichever it heard first; so do the cuts
    /// of the reader statements of one member. A write counts only if both its node's
    /// revocation and its reader statements keep it; a writer no reader cut names keeps its
    /// writes once the member may write again (it writes under a new writer then).
    private static func writers(_ held: Held, own: NodeID) -> RevokedWriters {
        let revoked = revocationCuts(held.cutParts, revoked: held.revoked)
        var readers = readerCuts(held.roleParts)
        readers[own] = nil
        var cuts: [RevokedWriters.Cut] = []
        for node in Set(revoked.keys).union(readers.keys) {
            let revocation = revoked[node]
            let reader = readers[node]
            let isReader = node != own && held.roles[node]?.role == .reader
            var counters: [NodeID: UInt64] = [:]
            var named = Set<NodeID>()
            if let revocation { named.formUnion(revocation.keys) }
            if let reader { named.formUnion(reader.keys) }
            for writer in named {
                counters[writer] = min(
                    revocation.map { $0[writer] ?? 0 } ?? .max,
                    reader?[writer] ?? (isReader ? 0 : .max)
                )
            }
            let why =
                if revocation != nil, let statement = held.revoked[node] { Self.reason(statement) } else {
                    held.roles[node].map(Self.reason) ?? ""
                }
            cuts.append(
                RevokedWriters.Cut(
                    node: node,
                    counters: counters,
                    keepsUnnamed: revocation == nil && !isReader,
                    reason: why
                )
            )
        }
        return RevokedWriters(cuts, signatures: requirement(held.signedWrites))
    }

    /// What the signed-writes statement that counts asks, if it requires signatures.
    private static func requirement(
        _ latest: (statement: SignedWritesStatement, cut: [NodeID: UInt64])?
    ) -> SignatureRequirement? {
        guard let latest, latest.statement.required else { return nil }
        let when = WallClock.iso8601(milliseconds: latest.statement.at)
        return SignatureRequirement(
            cut: latest.cut,
            reason:
                "\(SignatureRequirement.reasonStart) after signed writes were required at \(when) by \(latest.statement.by.short)"
        )
    }

    /// Each member's complete reader statements' cuts, joined (``RoleStatement/readerCuts(_:)``).
    static func readerCuts(_ roleParts: [[UInt8]: [Int: RoleStatement]]) -> [NodeID: [NodeID: UInt64]] {
        RoleStatement.readerCuts(roleParts.values.lazy.flatMap(\.values))
    }

    /// Each revoked node's complete cuts, joined.
    private static func revocationCuts(
        _ cuts: [[UInt8]: [Int: Revocation]],
        revoked: [NodeID: Revocation]
    ) -> [NodeID: [NodeID: UInt64]] {
        var counters: [NodeID: [NodeID: UInt64]] = [:]
        for parts in cuts.values {
            guard let first = parts.values.first, let count = first.cut?.parts, parts.count == count,
                (0..<count).allSatisfy({ parts[$0] != nil })
            else { continue }
            for part in parts.values {
                counters[first.node, default: [:]].merge(part.cut?.counters ?? [:]) { max($0, $1) }
            }
        }
        return counters.filter { revoked[$0.key] != nil }
    }

    /// When a cut is new (`news`), overrules what the replica already holds of the writes it
    /// refuses (taken in before the revocation was); returns how many fields and items changed.
    @discardableResult
    func overruleRevokedWrites(news: News) async -> Int {
        guard news.cutsChanged else { return 0 }
        let store = self.store
        let writers = revokedWriters
        return
            (try? await io.write { try store.overruleRevokedWrites(writers, wallMilliseconds: WallClock.milliseconds) })
            ?? 0
    }

    /// The words a refused write's overrule carries (storage finds them by their start).
    /// The reason an overruled write shows. The revocation's name and reason are signed by an
    /// admitting machine but were typed (or chosen by the revoked member, for its name): escaped
    /// before they become part of a write that every replica stores and shows.
    static func reason(_ revocation: Revocation) -> String {
        let name = TerminalText.escaped(revocation.name)
        let reason = TerminalText.escaped(revocation.reason)
        return
            "written by revoked node \(revocation.node.short)\(name.isEmpty ? "" : " (\(name))") after its revocation at \(WallClock.iso8601(milliseconds: revocation.at))\(reason.isEmpty ? "" : ": \(reason)")"
    }

    /// The reason a write refused by a reader cut shows: who was a reader since when. (A
    /// member made a writer again keeps its earlier cuts: its latest statement then names the
    /// time it may write again.)
    static func reason(_ role: RoleStatement) -> String {
        let name = TerminalText.escaped(role.name)
        let when = WallClock.iso8601(milliseconds: role.at)
        let what =
            role.role == .reader
            ? "after it was made a reader at \(when) by \(role.by.short)"
            : "while it was a reader (may write again since \(when))"
        return "written by reader node \(role.node.short)\(name.isEmpty ? "" : " (\(name))") \(what)"
    }
}
