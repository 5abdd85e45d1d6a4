/// The rules that keep a replica's own dots unique and its version vector honest when its files
/// are rolled back (a backup restored, a VM snapshot, a directory copied and used twice).
///
/// A dot is `(writer, counter)`. A replica writes under one *writer id* at a time: at first its
/// node id, later fresh random ids. A writer's counters are used by one replica history only, and
/// a replica takes a fresh writer whenever it cannot prove that its history continues the one its
/// current writer last wrote in. After a rollback the old writer's entry in the version vector
/// therefore stays at what the replica really holds (so peers send the lost writes back), and no
/// new write can take a dot a lost write already had. Docs/MERGE.md argues this in full.
///
/// Two witnesses decide "continuity":
/// - a *marker* outside the replica's files (storage keeps it where backups and restores of the
///   data directory do not reach, tagged with the machine's boot), recording how many changes the
///   replica had made or received when its writer last wrote (or received); a replica counting
///   fewer has been rolled back, whether it lost local edits or received ones, and a missing marker
///   (a reboot, another machine) proves nothing;
/// - a *peer* that holds more of the current writer's writes than the replica itself: only a
///   rollback can cause that, since every write of a writer starts on its replica.
public enum WriterContinuity {
    /// Whether the current writer may go on: only if a marker of this boot exists and the replica
    /// counts at least the changes the marker recorded (`held`). (A replica ahead of its marker is
    /// one whose process stopped between committing and recording.)
    public static func isProven(marker: UInt64?, held: UInt64) -> Bool {
        guard let marker else { return false }
        return marker <= held
    }

    /// Whether a peer's version vector (or a batch's covers) proves that this replica lost writes
    /// of its own current writer: the peer holds more of them than the replica does.
    public static func peerWitnessesRollback(writer: NodeID, held: VersionVector, peer: VersionVector) -> Bool {
        peer[writer] > held[writer]
    }
}

extension NodeID {
    /// A fresh random id.
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> NodeID {
        NodeID(high: generator.next(), low: generator.next())
    }

    public static func random() -> NodeID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A fresh writer id for `node`: the node's first 64 bits, then 64 random ones. A writer id
    /// names the node that writes under it, so a revocation can cut its writes under every
    /// writer it ever takes (``RevokedWriters``); the random half keeps each incarnation's dots
    /// apart, as ``WriterContinuity`` needs. The node's own id is its first writer.
    public static func writer<G: RandomNumberGenerator>(for node: NodeID, using generator: inout G) -> NodeID {
        var low: UInt64 = generator.next()
        while low == node.low { low = generator.next() }
        return NodeID(high: node.high, low: low)
    }

    public static func writer(for node: NodeID) -> NodeID {
        var generator = SystemRandomNumberGenerator()
        return writer(for: node, using: &generator)
    }

    /// True if this writer id names `node` (its first 64 bits are the node's). Writer ids taken
    /// before writer ids named their node are random and name nobody.
    public func isWriter(of node: NodeID) -> Bool { high == node.high }
}

/// Resuming an interrupted delta stream (Docs/MERGE.md, "Rolled-back replicas").
///
/// A receiver counts a stream's batches in its version vector only when the stream completes, and
/// tells the sender in its hello how far the stream got, and which incarnation (writer id) of the
/// sender sent it. The sender resumes from there only if it is still that incarnation: a sender
/// that was rolled back since (and so writes under a new writer) may have lost the newer states of
/// fields whose older writes the stream already covered, and must start again from the receiver's
/// vector; the receiver drops the progress for the same reason.
public enum StreamResume {
    /// Where `sender`'s delta starts for a receiver that said hello with `vector` and `resume`.
    public static func start(
        receiver vector: VersionVector,
        resume: VersionVector,
        resumeFor: NodeID?,
        senderWriter: NodeID
    ) -> VersionVector {
        resumeFor == senderWriter ? vector.joined(with: resume) : vector
    }
}
