public import LansyncIdentity
import LansyncNode
import LansyncReplica

/// Setting what a member may do (`lansync members role`, Docs/SECURITY.md "Roles"): signed with
/// the authority's key on an admitting machine, and passed on like a revocation.
extension DataDirectory {
    /// What ``setRole(store:target:role:)`` did.
    public struct RoleChange: Sendable {
        public let member: Member
        /// The new statement (its first part), or nil when the member already had the role.
        public let statement: RoleStatement?
        /// The new set of admitting machines, when the role moved the member in or out of it.
        public let admitters: AdmitterSet?
    }

    /// Gives the member `target` names (its name, node id, or a unique start of it) `role`:
    /// signs the statement (a reader's with its write cut: what this replica holds of each of
    /// its writers), and a new set of admitting machines when the member enters or leaves it
    /// (a reader or a writer holding the authority's key could sign itself another role), keeps
    /// them and nudges the running node, which passes them on.
    public func setRole(store: any ReplicaStorage, target: String, role: MemberRole) throws -> RoleChange {
        guard let authority = try admittingAuthority() else {
            throw HostError(
                "this machine cannot set roles: it does not hold the cluster's authority key; run 'lansync members role' on an admitting machine"
            )
        }
        let member = try self.member(named: target, store: store)
        guard !member.isThisNode else {
            throw HostError(
                "'\(target)' is this machine, whose key signs the statement: set its role from another admitting machine"
            )
        }
        guard member.revocation == nil else {
            throw HostError("'\(target)' was revoked: it has no role any more (it can join again with a new invite)")
        }
        let info = try store.info()
        let (_, admitters, _, roles) = try statements(store: store)
        if role == .admitter, admitters == nil {
            throw HostError(
                "no set of admitting machines was made yet (every machine given the cluster file admits, and one that joined with an invite never holds the key): name them with 'lansync cluster admitters' first"
            )
        }
        let inSet = admitters?.nodes.contains(member.nodeID) ?? false
        guard member.role != role || (role == .admitter) != inSet else {
            return RoleChange(member: member, statement: nil, admitters: nil)
        }
        let parts = try RoleStatement.make(
            node: member.nodeID,
            name: member.name ?? "",
            role: role,
            at: try Self.stamp(after: roles[member.nodeID]?.at, what: "role of this member"),
            by: info.nodeID,
            keeping: try readerCut(of: member.nodeID, store: store),
            authority: authority
        )
        var records = parts.map(ClusterStatement.role)
        var set: AdmitterSet?
        if let admitters, (role == .admitter) != inSet {
            let nodes = admitters.nodes.filter { $0 != member.nodeID } + (role == .admitter ? [member.nodeID] : [])
            guard nodes.count <= AdmitterSet.maxNodes else {
                throw HostError("at most \(AdmitterSet.maxNodes) admitting machines")
            }
            set = try AdmitterSet.make(
                nodes: nodes,
                at: try Self.stamp(after: admitters.at, what: "set of admitting machines"),
                by: info.nodeID,
                authority: authority
            )
            records += set.map { [ClusterStatement.admitters($0)] } ?? []
        }
        try store.addStatements(records.map { ($0.key, $0.encoded) })
        ControlClient.statementsChanged(path: controlSocketPath)
        return RoleChange(member: member, statement: parts.first, admitters: set)
    }
}

extension DataDirectory {
    /// The cut a new reader statement of `node` names: what this replica holds of each of its
    /// writers, but never past an earlier reader cut of it. The version vector counts the
    /// refused writes too (they were merged, then overruled), and cuts join by their largest
    /// counter: a later cut from the vector would keep what an earlier one refused.
    func readerCut(of node: NodeID, store: any ReplicaStorage) throws -> [NodeID: UInt64] {
        let held = try store.versionVector()
        var cut = Dictionary(uniqueKeysWithValues: held.nodes.filter { $0.isWriter(of: node) }.map { ($0, held[$0]) })
        let trust = try clusterCertificate()
        let statements = try store.statementRecords().compactMap { record -> RoleStatement? in
            guard case .role(let role)? = ClusterStatement(encoded: record), role.node == node, role.isSigned(by: trust)
            else { return nil }
            return role
        }
        for (writer, limit) in RoleStatement.readerCuts(statements)[node] ?? [:] {
            cut[writer] = min(cut[writer] ?? 0, limit)
        }
        return cut
    }
}

extension LocalReplica {
    /// Gives the member `target` names `role` (`lansync members role`).
    public func setRole(_ target: String, role: MemberRole) throws -> DataDirectory.RoleChange {
        try directory.setRole(store: store, target: target, role: role)
    }

    /// Why this replica may only read (its member is a reader), or nil if it may write.
    public func readOnlyReason() throws -> String? { try store.readOnlyReason() }
}
