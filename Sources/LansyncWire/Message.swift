public import LansyncCore

/// Everything two nodes say to each other in a session, after the TLS handshake.
///
/// Each message travels in one frame (see ``Frame``). The encoding is versioned by the hello's
/// ``ProtocolVersion``; a node that receives a message type it does not know closes the session
/// with ``WireError``.
public enum Message: Hashable, Sendable {
    /// The first message each side sends: who it is and what it has.
    case hello(Hello)
    /// A piece of the sender's delta, numbered within the session; the receiver applies it in one
    /// transaction and acknowledges it.
    case batch(sequence: UInt64, DeltaBatch)
    /// The receiver applied batches up to and including `sequence`.
    case ack(sequence: UInt64)
    /// The sender's delta is complete: the receiver now holds everything the sender had when it
    /// started that delta (`versionVector`).
    case done(versionVector: VersionVector)
    /// The last batch of a delta and its `done` in one message (protocol 1.9; only to a peer
    /// that announced it): the receiver applies the batch and completes the stream in one
    /// transaction, then acknowledges the batch. A small live change travels as one of these.
    case finalBatch(sequence: UInt64, DeltaBatch, done: VersionVector)
    /// Anti-entropy: the sender's current version vector, sent periodically and when idle. The
    /// receiver answers with a delta only if the sender lacks something.
    case summary(versionVector: VersionVector)
    /// Why the sender is closing the session (or refusing a change).
    case error(ProtocolError)
    /// About how many field states the sender's delta now starting will send (protocol 1.2; only
    /// for a large delta): what lets the receiver show its progress and an ETA.
    case expect(fieldStates: UInt64)
    /// A machine with an invite asks to join the cluster. Sent only on a connection where it
    /// presented no certificate, as the one message such a connection may carry; the answer is
    /// ``joinAccepted(_:)`` or ``error(_:)`` with ``ProtocolError/Code/joinRefused``.
    case joinRequest(JoinRequest)
    /// The inviter's answer to a valid ``joinRequest(_:)``.
    case joinAccepted(JoinAccepted)
    /// The writers and counters the sender's replica now holds beyond what it last told
    /// (protocol 1.10, Docs/SCALE.md "Spread"): sent instead of a change the sender passes on
    /// over a session the receiver pruned. The receiver asks for it (``graft``) if its other
    /// peers do not bring it soon.
    case have(versionVector: VersionVector)
    /// The receiver got a change it already held over this session: from now on both sides pass
    /// every change over it, their own edits too, by ``have(versionVector:)`` only.
    case prune
    /// The sender lacks what a ``have(versionVector:)`` announced: changes go at once over this
    /// session again (a `summary` follows, saying what it holds).
    case graft
    /// A `batch` or `finalBatch` whose changes reached the sender after crossing `hops` sessions
    /// (0: the sender made them) (protocol 1.11, sent only to peers that announced it): what
    /// lets a change go over every session near its origin (Docs/SCALE.md, "Spread").
    indirect case reached(hops: UInt8, Message)
    /// The sender's own progress, signed by its key (protocol 1.13, sent only to peers that
    /// announced it): sent after each delta the sender's own writes moved, so that the receiver
    /// holds a signed report covering every write of the sender it received, to pass on and to
    /// prove a rollback to the sender itself (``Hello/SignedReport``).
    case report(Hello.SignedReport)
}

extension Message {
    /// The message without its hop count (``reached(hops:_:)``).
    public var withoutHops: Message {
        if case .reached(_, let inner) = self { inner } else { self }
    }

    /// The hop count the message carries (``reached(hops:_:)``), nil if none.
    public var hops: UInt8? {
        if case .reached(let hops, _) = self { hops } else { nil }
    }

    /// The proofs of the batch the message carries (none for any other message).
    public var batchProofs: [RunProof] {
        switch self {
        case .batch(_, let batch), .finalBatch(_, let batch, _): batch.proofs
        case .reached(_, let inner): inner.batchProofs
        default: []
        }
    }

    /// The message with its batch's proofs left out (a batch for a peer before protocol 1.14,
    /// or the batch a `proved` message wraps).
    public var withoutProofs: Message { withProofs([]) }

    /// The message with its batch's proofs set to `proofs` (any other message as it is).
    public func withProofs(_ proofs: [RunProof]) -> Message {
        switch self {
        case .batch(let sequence, var batch):
            batch.proofs = proofs
            return .batch(sequence: sequence, batch)
        case .finalBatch(let sequence, var batch, let done):
            batch.proofs = proofs
            return .finalBatch(sequence: sequence, batch, done: done)
        case .reached(let hops, let inner):
            return .reached(hops: hops, inner.withProofs(proofs))
        default:
            return self
        }
    }

    /// Whether the message carries field states (a batch or a final batch, with hops or not).
    public var isBatch: Bool { batchCovers != nil }

    /// Whether the message ends a delta the sender sent (a `done`, a final batch).
    public var endsDelta: Bool {
        switch withoutHops {
        case .done, .finalBatch: true
        default: false
        }
    }

    /// What a batch or final batch covers (``DeltaBatch/covers``), with hops or not; nil for
    /// any other message.
    public var batchCovers: VersionVector? {
        switch withoutHops {
        case .batch(_, let batch), .finalBatch(_, let batch, _): batch.covers
        default: nil
        }
    }
}

/// What a machine joining with an invite sends (Docs/PROTOCOL.md, "Joining").
public struct JoinRequest: Hashable, Sendable {
    /// The name it asks to be known by.
    public var name: String
    /// The public key it made, to be certified (DER SubjectPublicKeyInfo).
    public var publicKey: [UInt8]
    /// HMAC-SHA256 of the key and name, keyed by the invite's one-time secret.
    public var proof: [UInt8]

    public init(name: String, publicKey: [UInt8], proof: [UInt8]) {
        self.name = name
        self.publicKey = publicKey
        self.proof = proof
    }
}

/// The inviter's answer: the node certificate it issued for the joining machine's key, the
/// cluster authority's certificate (both DER), and the name the members know the machine by (the
/// one it asked for, else the one given to `invite --name`; empty if neither).
public struct JoinAccepted: Hashable, Sendable {
    public var certificate: [UInt8]
    public var authority: [UInt8]
    public var name: String

    public init(certificate: [UInt8], authority: [UInt8], name: String = "") {
        self.certificate = certificate
        self.authority = authority
        self.name = name
    }
}

/// The hello: protocol version, identity, role and version vector; since 1.1 also the sender's
/// writer id and how far the receiver's last stream to the sender got (``StreamResume``).
public struct Hello: Hashable, Sendable {
    public var version: ProtocolVersion
    public var nodeID: NodeID
    public var clusterID: NodeID
    public var role: Role
    public var name: String
    public var versionVector: VersionVector
    /// The writer id the sender issues its writes under now: its incarnation. (A 1.0 hello has
    /// none; it reads as the node id.)
    public var writer: NodeID
    /// What the stream the *receiver* last sent to this sender covered, without completing it,
    /// and the receiver's writer id when it sent it; empty and nil when there is none.
    public var resume: VersionVector
    public var resumeFor: NodeID?
    /// The cluster statements the sender holds (protocol 1.3): revocations and the set of
    /// admitting machines, each signed by the cluster's authority, in binary form. Every session
    /// spreads them; the receiver keeps the ones its authority signed (LansyncIdentity's
    /// `ClusterStatement`; the wire does not judge them).
    public var statements: [[UInt8]]
    /// What the sender knows of how far other members have seen (protocol 1.4): each one's
    /// version vector as of its last session anywhere, gossiped so that every replica learns the
    /// cluster's stable frontier (Docs/MERGE.md, "Causal stability and collection").
    public var reports: [Report] = []
    /// When the sender last rejoined the cluster from a snapshot after being away (protocol 1.5;
    /// Unix ms, 0 if never): a peer that still counts it as away takes it back once this is
    /// newer than the last it heard of it (Docs/MERGE.md, "Coming back after being away").
    public var rejoinedAt: UInt64 = 0
    /// Since when the sender counts itself as away (it has met no member for longer than the
    /// away window; Unix ms), or when it rejoined if its snapshot is not in yet; 0 if neither
    /// (protocol 1.5). Such a member refuses no one's state, which a peer needs to know when
    /// both count each other as away.
    public var awaySince: UInt64 = 0
    /// The sender's wall clock when it said hello (protocol 1.7; Unix ms, 0 if it did not say):
    /// how far apart two machines' clocks are, which `status` and `lansync doctor` show.
    public var clock: UInt64 = 0
    /// The writers the sender folded (protocol 1.8; Docs/MERGE.md, "Retired writers fold"): the
    /// vectors of its own this session tells (its hello's, the resume point, its summaries and
    /// `done`) leave out the entries this covers, and are read back joined with it
    /// (``unfolded()``); so do the reports marked ``Report/toldFolded``.
    public var folded = VersionVector()
    /// The port the sender accepts peers on (protocol 1.8; 0 if it did not say): with the address
    /// a session came from, where others can reach it.
    public var listenPort: UInt64 = 0
    /// Where the sender last reached other members (protocol 1.8, at most
    /// ``WireLimits/maxAddresses``): hints a receiver may dial, so a node that multicast cannot
    /// reach (another subnet, a VPN) finds its peers after meeting any one member. Only hints:
    /// TLS still decides who answers.
    public var addresses: [Address] = []
    /// How many sessions of its active view the sender holds as it says hello (protocol 1.10;
    /// Docs/SCALE.md): 0, a member alone, is let in even by a full view. (A hello older than
    /// 1.10 reads as 0: an older node is never refused for a full view.)
    public var viewSessions: UInt64 = 0
    /// The session is a round of anti-entropy outside the views (protocol 1.10): the receiver
    /// neither counts it in its view nor refuses it for a full one; the dialler closes it once
    /// both are up to date.
    public var outsideView = false
    /// About how many members the sender has heard of, with those its peers had (protocol
    /// 1.11, ``MemberSketch``); nil from an older node.
    public var members: MemberSketch?
    /// Since when the sender's replica is stale (protocol 1.12; Unix ms, 0 if it is not): put back
    /// from a copy older than the away window, or rejoining and its snapshot not in yet. Such a
    /// replica may lack what the others purged, so no replica rejoins from it; ``awaySince``
    /// cannot tell it from a member that merely has not heard of the relay (Docs/MERGE.md,
    /// "Stale or away"). A hello older than 1.12 reads as 0, and a receiver then goes by
    /// ``awaySince`` alone.
    public var staleSince: UInt64 = 0
    /// Members' progress, each report signed by the member it is about (protocol 1.13): the
    /// sender's own, as of this hello, and the latest it holds of others. A receiver uses a
    /// report passed on only with its member's signature, so no member speaks for another
    /// (Docs/SECURITY.md); ``reports`` is what an older node reads, and a 1.13 node leaves it
    /// empty.
    public var signedReports: [SignedReport] = []

    /// A member's address as a hello passes it on.
    public struct Address: Hashable, Sendable {
        public var nodeID: NodeID
        /// `host:port` (`[v6]:port`).
        public var address: String
        /// Unix milliseconds of the last session there.
        public var at: UInt64

        public init(nodeID: NodeID, address: String, at: UInt64) {
            self.nodeID = nodeID
            self.address = address
            self.at = at
        }
    }

    /// One member's progress as a hello gossips it.
    public struct Report: Hashable, Sendable {
        public var nodeID: NodeID
        /// Unix milliseconds of the member's session the vector comes from.
        public var at: UInt64
        public var seen: VersionVector
        /// The report leaves out the writers the hello's ``Hello/folded`` covers (protocol 1.8):
        /// told so only when the member was known to have seen all of them, so joining them back
        /// is exact. A report not marked is told whole.
        public var toldFolded = false

        public init(nodeID: NodeID, at: UInt64, seen: VersionVector, toldFolded: Bool = false) {
            self.nodeID = nodeID
            self.at = at
            self.seen = seen
            self.toldFolded = toldFolded
        }
    }

    /// A member's report of its own progress, signed with its key: what lets a third machine
    /// believe it second-hand. ``at`` is the member's own clock when it signed (a receiver takes a
    /// time ahead of its own as its own now); ``seen`` its whole version vector, folds joined
    /// back. ``key`` is the member's P-256 public key (33 bytes, compressed), which names the
    /// member: its node id is the key's fingerprint. ``signature``: ECDSA P-256 over
    /// ``signedBytes(cluster:)`` (64 bytes, r then s).
    public struct SignedReport: Hashable, Sendable {
        public var nodeID: NodeID
        public var at: UInt64
        public var seen: VersionVector
        public var key: [UInt8]
        public var signature: [UInt8]

        public static let keyBytes = 33
        public static let signatureBytes = 64

        public init(nodeID: NodeID, at: UInt64, seen: VersionVector, key: [UInt8], signature: [UInt8]) {
            self.nodeID = nodeID
            self.at = at
            self.seen = seen
            self.key = key
            self.signature = signature
        }

        /// What the member signs: a domain tag, the cluster (a report is not believed in
        /// another cluster), then its id, time and vector in their wire forms.
        public static func signedBytes(cluster: NodeID, nodeID: NodeID, at: UInt64, seen: VersionVector) -> [UInt8] {
            var w = ByteWriter()
            w.raw(Array("lansync member report 1".utf8))
            w.nodeID(cluster)
            w.nodeID(nodeID)
            w.varint(at)
            w.versionVector(seen)
            return w.bytes
        }

        public func signedBytes(cluster: NodeID) -> [UInt8] {
            Self.signedBytes(cluster: cluster, nodeID: nodeID, at: at, seen: seen)
        }

        /// The report as stored beside a member's record, to pass on: its wire form.
        public var encoded: [UInt8] {
            var w = ByteWriter()
            MessageCoder.encode(self, into: &w)
            return w.bytes
        }

        /// A stored report read back; nil if the bytes are not one.
        public init?(encoded: [UInt8]) {
            var r = ByteReader(encoded)
            guard let report = try? MessageCoder.decodeSignedReport(&r), r.isAtEnd else { return nil }
            self = report
        }
    }

    public init(
        version: ProtocolVersion = .current,
        nodeID: NodeID,
        clusterID: NodeID,
        role: Role,
        name: String,
        versionVector: VersionVector,
        writer: NodeID? = nil,
        resume: VersionVector = VersionVector(),
        resumeFor: NodeID? = nil,
        statements: [[UInt8]] = []
    ) {
        self.version = version
        self.nodeID = nodeID
        self.clusterID = clusterID
        self.role = role
        self.name = name
        self.versionVector = versionVector
        self.writer = writer ?? nodeID
        self.resume = resume
        self.resumeFor = resumeFor
        self.statements = statements
    }

    /// The hello with the sender's own vectors read back whole: the entries it folded away
    /// restored (``folded``), which is exact because its folded set is covered by its vector.
    /// The reports stay as told: the receiver joins ``folded`` back into those marked
    /// ``Report/toldFolded`` only for the writers it knows, so a hello never makes it hold a
    /// vector per report as large as the folds.
    public func unfolded() -> Hello {
        guard !folded.isEmpty else { return self }
        var hello = self
        hello.versionVector = versionVector.unfolded(with: folded)
        hello.resume = resume.isEmpty ? resume : resume.unfolded(with: folded)
        return hello
    }

    /// What the sender is: an ordinary node, the relay, or a one-shot `lansync sync`.
    public enum Role: UInt8, Hashable, Sendable {
        case peer = 0
        case relay = 1
        /// A one-shot `lansync sync`: exchanges everything and leaves.
        case oneShot = 2
    }
}

/// The protocol's version. Nodes with different ``major`` versions cannot talk and say so;
/// ``minor`` versions add only what older nodes may ignore.
public struct ProtocolVersion: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let major: UInt32
    public let minor: UInt32

    public init(major: UInt32, minor: UInt32) {
        self.major = major
        self.minor = minor
    }

    /// 1.1 added the writer and the resume point to the hello; 1.2 the batches that carry removal
    /// logs and field deltas (message type 7), sent only to peers that announced 1.2; 1.3 the
    /// cluster statements (revocations, admitting machines) at the end of the hello (older nodes
    /// skip them); 1.4 the members' reports after them; 1.5 when the sender last rejoined from a
    /// snapshot, and the error `away`; 1.6 removed fields (the write tag `unset`), sent only to
    /// peers that announced 1.6 (an older one is told to upgrade when a batch would carry one);
    /// 1.7 the sender's wall clock at the end of the hello (older nodes skip it); 1.8 the writers
    /// the sender folded after it (``Hello/folded``; an older node skips them, and reads the
    /// sender's vectors as told: short of the folded writers, so it may send their fields
    /// again, never less); 1.9 a delta's last batch and its `done` in one message (type 11,
    /// ``Message/finalBatch(sequence:_:done:)``), sent only to peers that announced 1.9; 1.10
    /// the sender's view at the end of the hello (``Hello/viewSessions``, ``Hello/outsideView``;
    /// older nodes skip them), and messages `have`, `prune` and `graft`, sent only to peers that
    /// announced 1.10; 1.11 the sender's count of members at the end of the hello
    /// (``Hello/members``, 64 bytes; older nodes skip it) and hop counts before a batch (type 15,
    /// ``Message/reached(hops:_:)``), sent only to peers that announced 1.11; 1.12 since when
    /// the sender's replica is stale, at the end of the hello (``Hello/staleSince``; older nodes
    /// skip it); 1.13 members' reports signed by their members at the end of the hello
    /// (``Hello/signedReports``; older nodes skip them) and the sender's own signed report as a
    /// message of its own (type 16, ``Message/report(_:)``), sent only to peers that announced
    /// 1.13; 1.14 the signed runs of a batch's versions before it (type 17, ``DeltaBatch/proofs``),
    /// sent only to peers that announced 1.14 (an older one gets the batch without them).
    public static let current = ProtocolVersion(major: 1, minor: 14)

    /// The first version that takes a batch's proofs (signed writes).
    public static let signedWrites = ProtocolVersion(major: 1, minor: 14)

    /// The first version that carries signed reports (``Hello/SignedReport``).
    public static let signedReports = ProtocolVersion(major: 1, minor: 13)

    /// The first version whose hello tells a stale replica from one away itself.
    public static let staleness = ProtocolVersion(major: 1, minor: 12)

    /// The first version that takes hop counts (``Message/reached(hops:_:)``).
    public static let hops = ProtocolVersion(major: 1, minor: 11)

    /// The first version whose hello says how many view sessions the sender holds, and that
    /// takes `have`, `prune` and `graft`.
    public static let views = ProtocolVersion(major: 1, minor: 10)

    /// The first version that takes a delta's last batch with its `done`.
    public static let finalBatches = ProtocolVersion(major: 1, minor: 9)

    /// The first version whose hello says which writers its vectors leave out.
    public static let folding = ProtocolVersion(major: 1, minor: 8)

    /// The first version that reads removed fields (``FieldVersion/Write/unset``).
    public static let unsets = ProtocolVersion(major: 1, minor: 6)

    /// The first version that takes field deltas.
    public static let fieldDeltas = ProtocolVersion(major: 1, minor: 2)

    public static func < (lhs: ProtocolVersion, rhs: ProtocolVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }
    public var description: String { "\(major).\(minor)" }
}

/// An error a node reports to its peer: a stable code, whether retrying can help, and a message
/// for people.
public struct ProtocolError: Error, Hashable, Sendable {
    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var isPermanent: Bool { code.isPermanent }

    /// Error codes (stable across versions; Docs/PROTOCOL.md lists them).
    public enum Code: UInt16, Hashable, Sendable, CaseIterable {
        case protocolVersion = 1
        case wrongCluster = 2
        case identityMismatch = 3
        case duplicateNodeID = 4
        case malformedMessage = 5
        case frameTooLarge = 6
        case timeout = 7
        case storage = 8
        case rejectedChange = 9
        case busy = 10
        case shuttingDown = 11
        case unexpectedMessage = 12
        /// An invite that is unknown, used, or expired, or a join the inviter cannot grant.
        case joinRefused = 13
        /// The peer's identity was revoked by the cluster's authority.
        case revoked = 14
        /// The peer was away longer than the cluster's away window and holds writes this node
        /// lacks: it must rejoin from a snapshot before its state is taken (protocol 1.5).
        case away = 15

        /// Permanent errors will not go away by retrying the same thing; temporary ones may.
        public var isPermanent: Bool {
            switch self {
            case .protocolVersion, .wrongCluster, .identityMismatch, .duplicateNodeID, .malformedMessage,
                .frameTooLarge, .rejectedChange, .unexpectedMessage, .joinRefused, .revoked:
                true
            // A member told it is away rejoins and comes back at once.
            case .timeout, .storage, .busy, .shuttingDown, .away: false
            }
        }

        public var name: String {
            switch self {
            case .protocolVersion: "protocol-version"
            case .wrongCluster: "wrong-cluster"
            case .identityMismatch: "identity-mismatch"
            case .duplicateNodeID: "duplicate-node-id"
            case .malformedMessage: "malformed-message"
            case .frameTooLarge: "frame-too-large"
            case .timeout: "timeout"
            case .storage: "storage"
            case .rejectedChange: "rejected-change"
            case .busy: "busy"
            case .shuttingDown: "shutting-down"
            case .unexpectedMessage: "unexpected-message"
            case .joinRefused: "join-refused"
            case .revoked: "revoked"
            case .away: "away"
            }
        }
    }
}

extension ProtocolError: CustomStringConvertible {
    public var description: String { "\(code.name) (\(isPermanent ? "permanent" : "temporary")): \(message)" }
}
