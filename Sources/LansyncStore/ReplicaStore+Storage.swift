public import LansyncCore

// The SQLite replica as the node sees it: most requirements are the members of the same name.
extension ReplicaStore: ReplicaStorage {
    /// The file's and its write-ahead log's ``FileStamp``: a commit by any process moves it.
    public func quickChangeMark() -> [Int] { FileStamp(path: path).parts }

    public func deltaStream(
        for remote: VersionVector,
        maxUpdates: Int,
        budgetBytes: Int,
        unclaimed: Bool,
        deltaBase: VersionVector?
    ) throws(StoreError) -> any DeltaSource {
        try deltaStream(
            for: remote,
            maxUpdates: maxUpdates,
            budgetBytes: budgetBytes,
            unclaimed: unclaimed,
            deltaBase: deltaBase
        ) as DeltaStream
    }
}

extension DeltaStream: DeltaSource {}
