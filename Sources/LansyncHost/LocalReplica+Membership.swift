public import Foundation
public import LansyncIdentity
public import LansyncReplica
import LansyncStore

// Membership, imports and repair through the replica a front end holds open.
extension LocalReplica {
    /// Records a new one-time invite (`lansync invite`).
    public func invite(name: String?, expiresIn seconds: Int, address: PeerAddress?) throws -> DataDirectory.Invitation
    {
        try directory.invite(store: store, name: name, expiresIn: seconds, address: address)
    }

    /// The members this machine knows (`lansync members`).
    public func members() throws -> [DataDirectory.Member] { try directory.members(store: store) }

    /// Revokes the member `target` names (`lansync revoke`).
    public func revoke(_ target: String, reason: String) throws -> Revocation {
        try directory.revoke(store: store, target: target, reason: reason)
    }

    /// Marks the member `target` names as gone for good (`lansync members forget`): it no
    /// longer holds the stable frontier back nor counts for SYNCED. Returns it as it was.
    public func forget(_ target: String) throws -> DataDirectory.Member {
        let member = try directory.member(named: target, store: store)
        guard !member.isThisNode else {
            throw HostError("'\(target)' is this machine: forget it from another member")
        }
        try store.forgetMember(member.nodeID, at: WallClock.milliseconds)
        return member
    }

    /// The cluster's collection settings as this machine holds them.
    public func collectionSettings() throws -> CollectionSettings { try store.collectionSettings() }

    /// Sets how long deleted items stay restorable and how long a member may be silent
    /// (`lansync cluster set`), for the whole cluster: signed with the authority's key, so only
    /// on an admitting machine.
    public func setCollectionSettings(_ settings: CollectionSettings) throws {
        try directory.setCollectionSettings(store: store, settings)
    }

    /// Names the machines that keep the authority's key (`lansync cluster admitters`).
    public func setAdmitters(_ targets: [String]) throws -> AdmitterSet {
        try directory.setAdmitters(store: store, targets: targets)
    }

    /// Whether this machine admits others (it holds the cluster's authority key).
    public var admitsOthers: Bool { ((try? directory.admittingAuthority()) ?? nil) != nil }

    /// Imports JSON Lines from `input` in one transaction: all or nothing (`lansync import`).
    @discardableResult
    public func importItems(
        from input: FileHandle,
        progress: (ItemImport.Progress) -> Void = { _ in }
    ) throws -> ItemImport.Progress {
        try directory.importItems(from: input, into: store, progress: progress)
    }

    /// Creates an item from its JSON form (an export line, the API's create body); returns its id.
    public func createItem(json bytes: [UInt8]) throws -> ItemID { try directory.createItem(json: bytes, in: store) }
}

/// A cluster secret file: the cluster's authority (`lansync cluster create`).
public enum ClusterFile {
    /// Writes a new cluster secret to `path` (mode 0600), refusing to overwrite one; returns the
    /// new cluster's id.
    public static func create(at path: String) throws -> NodeID {
        let secret = try ClusterSecret.generate()
        try SecretFile.write(try secret.pem(), to: path)
        return secret.clusterID
    }
}
