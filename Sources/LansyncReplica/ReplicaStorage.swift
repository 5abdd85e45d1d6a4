public import LansyncCore

/// What the node (sessions, the relay's settling, collection, membership, status) asks of a
/// replica, whatever keeps it: the seam between the sync engine and storage.
///
/// ``ReplicaStore`` (one SQLite file) is the implementation every node runs today; a relay's
/// replica kept in a shared database is meant to be another. Each requirement is a whole step of
/// the engine, never a query: an implementation decides how to keep field states, the version
/// index and the feed, and answers in the terms of the pure core (``LansyncCore``), which makes
/// every merge decision. The contract is what ``ReplicaStore`` documents for the same member;
/// the parts every implementation must keep:
/// - every write is one transaction: a local edit, an applied batch (with its stream's progress),
///   a collection round, a rejoin; a crash leaves the replica before or after it;
/// - a dot is never reused, and the version vector never claims a write the replica does not
///   hold;
/// - what a delta stream claims is true when it reaches the receiver (``DeltaSource``);
/// - a member's data is checked against its bounds before it is stored (``receive(_:from:incarnation:wallMilliseconds:refuse:revoked:writers:allowance:rejoinedAt:completingStream:)``).
///
/// Calls block: the node makes them on its blocking-I/O threads, never on an event loop.
/// Requirements take every argument: a protocol has no default arguments, so the node passes
/// them all (``ReplicaStore`` keeps its defaults for its own callers).
public protocol ReplicaStorage: Sendable {
    // MARK: Identity and health

    /// The replica's node, cluster, writer and names (``ReplicaInfo``).
    func info() throws(StoreError) -> ReplicaInfo
    /// Starts a new writer when the current one's continuity is not proven (``WriterLease``);
    /// returns the writer in use.
    @discardableResult func renewWriterIfUnproven() throws(StoreError) -> NodeID
    /// A peer's vector seen in a hello: true if it holds more of this replica's own writer than
    /// the replica (a rollback), which retires that writer.
    @discardableResult func noteWitness(_ peer: VersionVector) throws(StoreError) -> Bool

    // MARK: Signed writes

    /// What signs the replica's own writes (Docs/SECURITY.md, "Signed writes").
    var signing: WriteSigning { get }
    /// The signed runs held, of `writer` only if given, by writer and first dot.
    func signedRuns(of writer: NodeID?) throws(StoreError) -> [SignedRun]
    /// Signs the replica's own writes it holds unsigned (made before it could sign), once;
    /// how many versions it signed (``HeldWriteSigning``).
    @discardableResult func signHeldOwnWrites() throws(StoreError) -> Int
    /// A number that grows with every transaction that changed a field (any process's): equal
    /// numbers mean the replica shows the same thing.
    func changeStamp() throws(StoreError) -> UInt64
    /// A mark read without a query: equal marks mean no commit happened between them (a
    /// different mark may be a false alarm). The node's poll for changes nobody announced reads
    /// the version vector only when it moves.
    func quickChangeMark() -> [Int]
    /// Commits of other processes to this replica that changed what it holds or the cluster's
    /// statements, as they happen, for as long as the stream is read; nil when the store has no
    /// such notice (a SQLite file: a command on the machine nudges the node over its control
    /// socket, and the node's poll of ``quickChangeMark()`` catches the rest).
    func commitsElsewhere() -> AsyncStream<CommitElsewhere>?
    /// The writers this replica has written as, oldest first.
    func writers() throws(StoreError) -> [WriterRecord]
    /// How many writers, of every member, this replica knows: what ``WriterBounds/total`` bounds.
    func writerCount() throws(StoreError) -> Int
    /// Why the replica is marked damaged (it then refuses writes), or nil.
    var damage: String? { get }

    // MARK: Versions and deltas

    /// What the replica holds.
    func versionVector() throws(StoreError) -> VersionVector
    /// How many field states a replica holding `remote` lacks, counted up to `cap`.
    func lacking(_ remote: VersionVector, cap: Int) throws(StoreError) -> Int
    /// The delta for a peer that announced `remote`, read a batch at a time: at most `maxUpdates`
    /// field states and about `budgetBytes` per batch; `unclaimed` (a session's first delta) also
    /// sends what this replica holds beyond its own vector; `deltaBase` lets list fields travel
    /// as deltas against what the peer is known to hold.
    func deltaStream(
        for remote: VersionVector,
        maxUpdates: Int,
        budgetBytes: Int,
        unclaimed: Bool,
        deltaBase: VersionVector?
    ) throws(StoreError) -> any DeltaSource
    /// The vector a hello announces, and the retired writers folded out of it.
    func announcedVectors() throws(StoreError) -> (vector: VersionVector, folded: VersionVector)
    /// Folds retired writers whose writes every member holds out of the per-field versions.
    @discardableResult func foldRetiredWriters(
        revoked: RevokedWriters,
        unchangedSince previous: VersionVector?
    ) throws(StoreError) -> (folded: VersionVector, vector: VersionVector)
    /// Adopts the folds a peer announced; returns this replica's folded writers.
    @discardableResult func adoptFolds(_ peerFolded: VersionVector) throws(StoreError) -> VersionVector

    // MARK: Sessions

    /// What a session with `peer` starts from (its stream's progress, what it was last known
    /// to hold).
    func sessionStart(with peer: NodeID) throws(StoreError) -> SessionStart
    /// Records that `sender` now writes as `incarnation` (a new incarnation restarts its
    /// stream's progress).
    func meet(_ sender: NodeID, incarnation: NodeID) throws(StoreError)
    /// Merges a batch of `sender`'s stream in one transaction, within `writers`' bounds and
    /// `refuse`'s limits, overruling `revoked` writes; `completingStream` records the stream
    /// complete in the same transaction.
    @discardableResult func receive(
        _ batch: DeltaBatch,
        from sender: NodeID,
        incarnation: NodeID,
        wallMilliseconds: UInt64,
        refuse: FieldRefusal?,
        revoked: RevokedWriters,
        writers: WriterBounds,
        allowance: Int?,
        rejoinedAt: UInt64?,
        completingStream: Bool
    ) throws(StoreError) -> ReceivedBatch
    /// `sender`'s stream reached its end: what it covered joins the version vector.
    func completeStream(from sender: NodeID, rejoinedAt: UInt64?) throws(StoreError)

    // MARK: Items

    /// One local edit, as one transaction; the dot it was issued.
    @discardableResult func apply(_ edit: ItemEdit, to id: ItemID, wallMilliseconds: UInt64) throws(StoreError) -> Dot
    /// An item's merge state, nil if the replica never held it.
    func itemState(_ id: ItemID) throws(StoreError) -> ItemState?
    /// Every item (of `type` only, when given; deleted ones too with `includeDeleted`), in byte
    /// order of ids; with `withLocalEdits`, each carries ``StoredItem/localEdit``.
    func forEachItem(
        type: String?,
        includeDeleted: Bool,
        withLocalEdits: Bool,
        _ body: (StoredItem) throws -> Void
    ) throws(StoreError)
    /// Every item changed after feed position `seq` (all with nil), deleted ones included; the
    /// marks to go on from.
    func forEachItem(changedAfter seq: Int64?, _ body: (StoredItem) throws -> Void) throws(StoreError) -> ReplicaMarks
    /// The fields in conflict.
    func conflicts() throws(StoreError) -> [FieldConflict]
    /// The names nodes gave themselves.
    func nodeNames() throws(StoreError) -> [NodeID: String]
    /// Live items, deleted items, fields in conflict.
    func counts() throws(StoreError) -> (items: Int, deleted: Int, conflicts: Int)
    /// Which of `dots` this replica received first.
    func firstSeen(_ dots: [Dot], item: ItemID, field: FieldName) throws(StoreError) -> Dot?

    // MARK: Peers

    func savePeer(_ record: PeerRecord) throws(StoreError)
    /// Several peers, the members' reports and names, in one transaction.
    func savePeers(
        _ records: [PeerRecord],
        reports: [MemberReport],
        names: [(name: String, ids: Set<NodeID>)]
    ) throws(StoreError)
    func peers() throws(StoreError) -> [PeerRecord]
    /// The latest local changes, and how many are beyond and within `seen`.
    func localChanges(
        limit: Int,
        seenBy seen: VersionVector
    ) throws(StoreError)
        -> (recent: [LocalChange], above: Int, atOrBelow: Int)
    /// Peers' refusals of this replica's own writes.
    func ownRejections() throws(StoreError) -> [Rejection]

    // MARK: Collection

    func recordReports(_ reports: [MemberReport], gossiped: Bool) throws(StoreError)
    func memberReports() throws(StoreError) -> [MemberReport]
    func forgetMember(_ node: NodeID, at now: UInt64, dropPeer: Bool) throws(StoreError)
    func collectionSettings() throws(StoreError) -> CollectionSettings
    func setCollectionSettings(_ settings: CollectionSettings) throws(StoreError)
    /// Marks the replica as its member's role says (Docs/SECURITY.md, "Roles"): `why` when the
    /// member is a reader (every local edit is then refused with it), nil when it may write.
    /// A replica that may write again, or whose current writer is among `retiring` (the writers
    /// its member's reader cuts name), writes under a new writer: a reader cut refuses the
    /// writers it names past their counters for good.
    func setReadOnly(_ why: String?, retiring: Set<NodeID>) throws(StoreError)
    /// Why the replica may only read, or nil if it may write.
    func readOnlyReason() throws(StoreError) -> String?
    /// One collection round (deleted items, retired writers, history), in one transaction.
    @discardableResult func collect(now: UInt64) throws(StoreError) -> CollectionRound
    func collectionFigures(now: UInt64) throws(StoreError) -> CollectionFigures
    /// The member holding the collection frontier back longest, if one does.
    func frontierLaggard(now: UInt64) throws(StoreError) -> NodeID?
    /// Members silent past the away window.
    func departedMembers(now: UInt64) throws(StoreError) -> Set<NodeID>

    // MARK: Rejoining after an absence

    func awaySince(now: UInt64) throws(StoreError) -> UInt64?
    func staleSince(now: UInt64) throws(StoreError) -> UInt64?
    func relayID() throws(StoreError) -> NodeID?
    /// The member an operator named for a stale replica to rejoin from (meta `rejoin_from`).
    func acceptedRejoinSource() throws(StoreError) -> NodeID?
    func noteRelay(_ relay: NodeID) throws(StoreError)
    func memberAwaySince(_ node: NodeID, now: UInt64) throws(StoreError) -> UInt64?
    func rejoinedAt() throws(StoreError) -> UInt64
    func hasRejoinPending() throws(StoreError) -> Bool
    /// Starts a rejoin: keeps aside the local writes `peer` has not seen, takes the members'
    /// reports.
    @discardableResult func rejoin(
        keepingUnseenBy peer: VersionVector,
        adopting reports: [MemberReport],
        now: UInt64
    ) throws(StoreError) -> RejoinStart
    /// Re-issues what a rejoin kept aside, under a new writer.
    func reissueRejoinPending(now: UInt64) throws(StoreError) -> RejoinOutcome?

    // MARK: Revocations, statements, invitations

    /// Overrules every write this replica holds that `revoked` refuses (a replica that has just
    /// learned a revocation took in writes of the revoked node that came after its cut), in one
    /// transaction; how many fields and items it overruled or deleted. Found through the version
    /// index (``VersionIndexReading``): the live versions of the revoked nodes' writers beyond
    /// their cut. (A list element whose own version a later write superseded is found when that
    /// field next merges something.)
    @discardableResult func overruleRevokedWrites(
        _ revoked: RevokedWriters,
        wallMilliseconds: UInt64
    ) throws(StoreError) -> Int
    /// The writes this replica refused for their member (revoked, a reader, or unsigned where
    /// signatures are required), newest first.
    func revokedWriteRejections(limit: Int) throws(StoreError) -> [Rejection]
    /// Stores signed statements not held yet; how many were new.
    @discardableResult func addStatements(_ statements: [(key: [UInt8], record: [UInt8])]) throws(StoreError) -> Int
    func statementRecords() throws(StoreError) -> [[UInt8]]
    /// Keeps an invitation an admitting machine issued: its secret, the name it admits, and
    /// when it expires.
    func addInvite(secret: [UInt8], name: String?, now: UInt64, expiresAt: UInt64) throws(StoreError)
    /// Every invitation this replica issued, used or not.
    func invites() throws(StoreError) -> [InviteRecord]
    /// Redeems the invitation whose secret `matches` for `node`, once.
    func redeemInvite(now: UInt64, by node: NodeID, matches: ([UInt8]) -> Bool) throws(StoreError) -> InviteRedemption

    // MARK: Search

    /// How much of the search index is still to be written.
    func searchBacklog() throws(StoreError) -> SearchBacklog
    /// Writes up to `fields` fields' search texts; what remains.
    @discardableResult func catchUpSearch(fields: Int) throws(StoreError) -> SearchBacklog
}

/// What another process committed to a replica this one shares (``ReplicaStorage/commitsElsewhere()``).
public enum CommitElsewhere: Sendable, Equatable {
    /// What the replica holds changed (or may have: notices were lost while not listening).
    case replica
    /// The cluster's statements changed (revocations, admitters, settings).
    case statements
}

/// A delta being read, a batch at a time (``ReplicaStorage/deltaStream(for:maxUpdates:budgetBytes:unclaimed:deltaBase:)``).
///
/// What a batch claims must be true when it reaches the receiver: a field whose versions left
/// the claimed range while the stream went on is sent before the claim (``DeltaStream``
/// explains how the SQLite store keeps this).
public protocol DeltaSource: Sendable {
    /// The next batch, or nil when the peer has everything. `peerHolds`: what the receiver is
    /// known to hold beyond what the stream was planned against.
    mutating func next(peerHolds: VersionVector) throws(StoreError) -> DeltaBatch?
    /// How many field states the receiver lacks, against the vectors the stream was planned with.
    func lacking(cap: Int) throws(StoreError) -> Int
}

/// The counts the node asks of every store by default, named once: ``ReplicaStore``'s default
/// arguments and the node's calls through ``ReplicaStorage`` (which has no defaults) use these.
public enum StoreDefaults {
    /// How far ``ReplicaStorage/lacking(_:cap:)`` counts what a peer lacks, for `status`.
    public static let lackingCap = 1_000_000
    /// How many refused writes of revoked members `status` lists.
    public static let revokedRejections = 100
}

/// Decides whether an incoming change is refused (``Limits``, or the relay's): a reason, or nil.
/// It sees the field key, the field as merging the change would leave it, the field as the
/// replica holds it before the merge (nil if new), and a count of the item's user fields before
/// the merge (read only if asked).
public typealias FieldRefusal = @Sendable (FieldKey, FieldState, FieldState?, () throws -> Int) throws -> String?
