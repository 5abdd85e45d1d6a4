public import LansyncIdentity
import LansyncNode
public import LansyncReplica

/// Requiring signed writes (`lansync cluster set signed-writes on|off`, Docs/SECURITY.md
/// "Requiring signed writes"): signed with the authority's key on an admitting machine, and
/// passed on like a revocation.
extension DataDirectory {
    /// Whether this replica requires signed writes, and since when and by whom: the latest
    /// complete statement it holds that its authority signed (nil: none was ever made).
    public func signedWritesStatement(store: any ReplicaStorage) throws -> SignedWritesStatement? {
        let trust = try clusterCertificate()
        let statements = try store.statementRecords().compactMap { record -> SignedWritesStatement? in
            guard case .signedWrites(let statement)? = ClusterStatement(encoded: record), statement.isSigned(by: trust)
            else { return nil }
            return statement
        }
        return SignedWritesStatement.latest(statements)?.statement
    }

    /// Requires (or stops requiring) signed writes from now on: signs the statement, its cut what
    /// this replica holds of every writer (what it holds stays, signed or not), keeps it and
    /// nudges the running node, which passes it on. Nil if the setting was already so.
    public func setSignedWrites(store: any ReplicaStorage, required: Bool) throws -> SignedWritesStatement? {
        guard let authority = try admittingAuthority() else {
            throw HostError(
                "this machine cannot change the cluster's settings: it does not hold the cluster's authority key; run 'lansync cluster set' on a machine that does (the one that created the cluster)"
            )
        }
        let latest = try signedWritesStatement(store: store)
        guard (latest?.required ?? false) != required else { return nil }
        let parts: [SignedWritesStatement]
        do {
            parts = try SignedWritesStatement.make(
                required: required,
                at: try Self.stamp(after: latest?.at, what: "signed-writes setting"),
                by: try store.info().nodeID,
                held: try store.versionVector(),
                authority: authority
            )
        } catch let error as SignedWritesStatement.TooManyWriters {
            throw HostError("cannot require signed writes: \(error)")
        }
        let records = parts.map(ClusterStatement.signedWrites)
        try store.addStatements(records.map { ($0.key, $0.encoded) })
        ControlClient.statementsChanged(path: controlSocketPath)
        return parts.first
    }
}

extension LocalReplica {
    /// The signed-writes setting this replica holds (``DataDirectory/signedWritesStatement(store:)``).
    public func signedWritesStatement() throws -> SignedWritesStatement? {
        try directory.signedWritesStatement(store: store)
    }

    /// Requires or stops requiring signed writes (`lansync cluster set signed-writes`).
    public func setSignedWrites(_ required: Bool) throws -> SignedWritesStatement? {
        try directory.setSignedWrites(store: store, required: required)
    }
}
