import Foundation
import GRDB
public import LansyncCore
public import LansyncReplica

/// What a backup file holds, as `lansync backup` and `lansync backup restore` report it.
public struct BackupSummary: Sendable, Equatable {
    /// The backup file.
    public var path: String
    /// Its size in bytes.
    public var bytes: UInt64
    /// The node whose replica it is, and the cluster that node belongs to.
    public var nodeID: NodeID
    public var clusterID: NodeID
    /// Live items it holds, and deleted ones (still restorable or collected).
    public var items: Int
    public var deleted: Int
    /// When it was taken (Unix milliseconds; 0 for a copy not made by `lansync backup`).
    public var takenAt: UInt64
}

/// What restoring a backup did.
public struct RestoreReport: Sendable, Equatable {
    public var backup: BackupSummary
    /// Where the replica it replaced was kept (nil if there was none).
    public var replacedCopy: String?
    /// The cluster's away window, read from the backup: a backup older than it is *stale*
    /// (Docs/MERGE.md): its node takes a snapshot from a current peer before it syncs.
    public var awayAfter: UInt64
}

extension ReplicaStore {
    /// Pages copied per step of SQLite's online backup. The copy reads one snapshot of the file
    /// (a read transaction, which in WAL mode never blocks a writer); steps only bound how much
    /// memory and time each call into SQLite takes.
    static let backupPagesPerStep: CInt = 1024
    /// The meta key a backup records its time under (removed again when it is restored).
    static let backupTakenKey = "backup_taken"

    /// Writes a consistent copy of this replica to `destination` with SQLite's online backup API,
    /// while the node and other processes go on reading and writing: the copy is the replica as
    /// one transaction saw it. It is written beside `destination` first and renamed into place,
    /// so `destination` is either the whole backup or untouched. Refuses an existing
    /// `destination` unless `replacing`, and always a directory, anything not a regular file, and
    /// anything in the replica's data directory (``SafeFile``).
    public func backup(
        to destination: String,
        replacing: Bool = false,
        wallMilliseconds: UInt64
    ) throws(StoreError) -> BackupSummary {
        let dataDirectory = SafeFile.parent(of: path)
        if let problem = SafeFile.writeProblem(
            destination,
            replacing: replacing,
            protectedDirectory: dataDirectory,
            protectedFiles: Self.databaseFiles(of: path)
        ) {
            throw .io(problem)
        }
        let partial: String
        do {
            partial = try SafeFile.makeSibling(of: destination)
        } catch {
            throw .io(
                "cannot write the backup to \(destination): \(Self.describing(error)); check the folder exists and you may write to it"
            )
        }
        do {
            let copy = try DatabaseQueue(path: partial)
            try database.backup(to: copy, pagesPerStep: Self.backupPagesPerStep)
            try copy.write { db in
                try db.execute(
                    sql: "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                    arguments: [Self.backupTakenKey, String(wallMilliseconds)]
                )
            }
            // One self-contained file: the copy's log goes into it and away.
            try copy.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
            try copy.close()
            Self.removeDatabase(at: partial, keepingMain: true)
            try SafeFile.commit(partial, to: destination)
        } catch {
            Self.removeDatabase(at: partial)
            throw .io("cannot write the backup to \(destination): \(Self.describing(error))")
        }
        return try Self.summary(ofBackup: destination)
    }

    /// Puts the replica at `path` back to the backup at `backup`, which must be a replica of
    /// `node` in `cluster`. The backup is copied (never changed), upgraded if an older version
    /// wrote it, and renamed into place; the replica it replaces is kept beside it
    /// (`replica.sqlite.before-restore-TIME`). The node must not be running.
    ///
    /// What the cluster then does is what it does for any rolled-back replica (Docs/MERGE.md):
    /// the next local write starts a new writer, and peers send back what the backup lacks.
    public static func restore(
        backup: String,
        into path: String,
        node: NodeID,
        cluster: NodeID
    ) throws(StoreError) -> RestoreReport {
        if let problem = FileAccess.readProblem(backup) { throw .permissionDenied(problem) }
        guard FileManager.default.fileExists(atPath: backup) else {
            throw .io("\(backup) does not exist: give the file 'lansync backup' wrote")
        }
        if let problem = SafeFile.readProblem(backup, protectedFiles: databaseFiles(of: path)) { throw .io(problem) }
        let fresh = path + ".restoring"
        removeDatabase(at: fresh)
        do {
            try copyDatabase(from: backup, to: fresh)
        } catch {
            removeDatabase(at: fresh)
            throw .io(
                "\(backup) is not a lansync backup (SQLite cannot read it: \(describing(error))): give a file 'lansync backup' wrote"
            )
        }
        let summary: BackupSummary
        let settings: CollectionSettings
        do {
            // Opening checks that it is a replica (and upgrades an older one's copy).
            let restored = try open(path: fresh)
            summary = try restored.summary(path: backup)
            settings = try restored.collectionSettings()
            guard summary.clusterID == cluster else {
                throw StoreError.io(
                    "\(backup) is a replica of another cluster (\(summary.clusterID.short), this directory's is \(cluster.short)): restore it in a directory of its own cluster"
                )
            }
            guard summary.nodeID == node else {
                throw StoreError.io(
                    "\(backup) is a backup of another node (\(summary.nodeID.short), this directory is \(node.short)): restore it in that node's directory, or let this one sync from its peers"
                )
            }
            try restored.database.write { db in
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [backupTakenKey])
            }
            try restored.database.close()
        } catch StoreError.notAReplica(_, let reason) {
            removeDatabase(at: fresh)
            throw .io("\(backup) is not a lansync backup (\(reason)): give a file 'lansync backup' wrote")
        } catch let error as StoreError {
            removeDatabase(at: fresh)
            throw error
        } catch {
            removeDatabase(at: fresh)
            throw .io("cannot prepare the restored copy of \(backup): \(describing(error))")
        }
        let replacedCopy = try putInPlace(fresh, at: path)
        return RestoreReport(backup: summary, replacedCopy: replacedCopy, awayAfter: settings.awayAfter)
    }

    /// What the backup file at `path` holds.
    static func summary(ofBackup path: String) throws(StoreError) -> BackupSummary {
        try open(path: path).summary(path: path)
    }

    private func summary(path: String) throws(StoreError) -> BackupSummary {
        let info = try info()
        let counts = try counts()
        let takenAt = try read { db in
            try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Self.backupTakenKey])
                .flatMap { UInt64($0) } ?? 0
        }
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value ?? 0
        return BackupSummary(
            path: path,
            bytes: bytes,
            nodeID: info.nodeID,
            clusterID: info.clusterID,
            items: counts.items,
            deleted: counts.deleted,
            takenAt: takenAt
        )
    }

    /// Copies the database at `source` (with what its write-ahead log holds) to a new file at
    /// `destination` through SQLite, leaving `source` as it was.
    private static func copyDatabase(from source: String, to destination: String) throws {
        var config = Configuration()
        config.readonly = true
        let fm = FileManager.default
        // A file with no log beside it is whole: read as immutable, so SQLite makes no -shm
        // file next to the user's backup (which may be on read-only media).
        var opened = source
        if !fm.fileExists(atPath: source + "-wal") {
            let absolute = source.hasPrefix("/") ? source : fm.currentDirectoryPath + "/" + source
            var allowed = CharacterSet.urlPathAllowed
            allowed.remove(charactersIn: "?#%")
            opened =
                "file:" + (absolute.addingPercentEncoding(withAllowedCharacters: allowed) ?? absolute) + "?immutable=1"
        }
        let from = try DatabaseQueue(path: opened, configuration: config)
        let to = try DatabaseQueue(path: destination)
        try from.backup(to: to)
        try to.close()
        try from.close()
    }

    /// Renames `fresh` to `path`, keeping the file it replaces (and its log) as
    /// `path.before-restore-TIME` (`-2`, `-3`... after it when two restores share a second);
    /// returns that name, or nil if there was no file.
    private static func putInPlace(_ fresh: String, at path: String) throws(StoreError) -> String? {
        let fm = FileManager.default
        var kept: String?
        do {
            if fm.fileExists(atPath: path) {
                let base = path + ".before-restore-\(Int(Date().timeIntervalSince1970))"
                var copy = base
                var n = 1
                while ["", "-wal", "-shm"].contains(where: { fm.fileExists(atPath: copy + $0) }) {
                    n += 1
                    copy = base + "-\(n)"
                }
                for suffix in ["", "-wal", "-shm"] where fm.fileExists(atPath: path + suffix) {
                    try fm.moveItem(atPath: path + suffix, toPath: copy + suffix)
                }
                kept = copy
            }
            for suffix in ["", "-wal", "-shm"] where fm.fileExists(atPath: fresh + suffix) {
                try fm.moveItem(atPath: fresh + suffix, toPath: path + suffix)
            }
        } catch {
            throw .io(
                "cannot put the restored replica in place of \(path) (\(error.localizedDescription)): the restored copy is \(fresh)"
            )
        }
        SafeFile.removeFile(damageMarkPath(path))
        return kept
    }

    /// Removes a database file and its companions, files only (``SafeFile/removeFile(_:)``):
    /// a directory a user happened to give such a name stays.
    private static func removeDatabase(at path: String, keepingMain: Bool = false) {
        for suffix in ["", "-wal", "-shm", "-journal"] where !(keepingMain && suffix.isEmpty) {
            SafeFile.removeFile(path + suffix)
        }
    }

    /// The replica at `path` and the files SQLite keeps beside it.
    static func databaseFiles(of path: String) -> [String] {
        ["", "-wal", "-shm", "-journal"].map { path + $0 }
    }

    private static func describing(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "\(error.resultCode)" }
        return error.localizedDescription
    }
}
