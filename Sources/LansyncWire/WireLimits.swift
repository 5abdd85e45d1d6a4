/// The hard limits of the wire protocol. They bound what one connection can make a node allocate.
public enum WireLimits {
    /// The largest frame a node sends or accepts (16 MiB). A larger announced length closes the
    /// connection before anything is read into memory.
    public static let maxFrameBytes = 16 << 20
    /// The bytes of field states a sender puts in one batch before closing it (a single larger
    /// field state still travels alone).
    public static let batchBudgetBytes = 2 << 20
    /// The most field states in one batch.
    public static let maxUpdatesPerBatch = 512
    /// Batches a sender may have in flight, unacknowledged, per session.
    public static let window = 4
    /// The longest node name in a hello.
    public static let maxNameBytes = 64
    /// The most cluster statements a hello carries, and the largest one (a signed revocation is
    /// under 500 bytes; a set of admitting machines, 16 bytes each, fits 256 of them).
    public static let maxStatements = 4096
    public static let maxStatementBytes = 4096
    /// The most bytes of statements one hello carries, all together (1 MiB): a cluster of a
    /// thousand members with a revocation each needs about a tenth of it, and a member sending
    /// made-up ones cannot make a node hold more than this of them.
    public static let maxStatementsBytes = 1 << 20
    /// The most member reports a hello gossips (protocol 1.4), and the most version-vector
    /// entries they carry all together: the frontier of a cluster of a few hundred members fits,
    /// and a member sending made-up ones cannot make a node hold more.
    public static let maxReports = 512
    /// Peers' addresses one hello passes on (``Hello/addresses``), and the longest one.
    public static let maxAddresses = 64
    public static let maxAddressBytes = 300
    public static let maxReportEntries = 65_536
    /// The most field states an `expect` may announce (about 10^12: more than any replica
    /// holds). It only feeds `status`'s progress and time left, but a larger one is a lie, and
    /// 2^64-1 made that arithmetic trap before issue 62: the session is refused as malformed.
    public static let maxAnnouncedFieldStates: UInt64 = 1 << 40
    /// The largest key or certificate in a join (DER): a P-256 key is 91 bytes, a certificate
    /// about 500.
    public static let maxJoinBlobBytes = 4096
}
