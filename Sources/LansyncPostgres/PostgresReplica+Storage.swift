import LansyncCore
public import LansyncReplica

/// A PostgreSQL replica is what the node runs against, as a SQLite file is: every requirement
/// with the SQLite store's semantics (the shared store suites run both).
extension PostgresReplica: ReplicaStorage, BatchIntake {
    /// Nothing to write: a PostgreSQL replica keeps no search texts. They serve the local API's
    /// searches, which read a SQLite replica; a relay on PostgreSQL serves sessions.
    public func searchBacklog() throws(StoreError) -> SearchBacklog {
        SearchBacklog(indexed: 0, latest: 0)
    }

    /// Nothing to write (``searchBacklog()``).
    @discardableResult
    public func catchUpSearch(fields: Int) throws(StoreError) -> SearchBacklog {
        SearchBacklog(indexed: 0, latest: 0)
    }
}
