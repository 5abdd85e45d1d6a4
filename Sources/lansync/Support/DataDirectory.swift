import ArgumentParser
import Foundation
import LansyncCore
import LansyncJSON
import LansyncIdentity
import LansyncNode
import LansyncStore
import LansyncTransport

/// The `--dir` option every replica command takes.
struct DataDirectoryOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The data directory (default: $LANSYNC_DIR, else ~/.lansync).", valueName: "DIR"))
    var dir: String?

    /// The directory, resolved as the contract says: --dir, $LANSYNC_DIR, ~/.lansync.
    var directory: DataDirectory {
        if let dir { return DataDirectory(path: dir) }
        if let env = ProcessInfo.processInfo.environment["LANSYNC_DIR"], !env.isEmpty { return DataDirectory(path: env) }
        // $HOME first, as a shell's ~ does (Foundation on Linux reads the password database).
        let home = ProcessInfo.processInfo.environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return DataDirectory(path: home + "/.lansync")
    }
}

/// The files of a data directory: the replica, the cluster secret and this node's identity.
struct DataDirectory {
    let path: String

    var replicaPath: String { path + "/" + ReplicaStore.fileName }
    var clusterPath: String { path + "/cluster.pem" }
    var nodePath: String { path + "/node.pem" }
    var controlSocketPath: String { path + "/control.sock" }

    /// This node's TLS credentials.
    func tlsIdentity() throws -> TLSIdentity {
        do {
            return try TLSIdentity(nodePEM: String(contentsOfFile: nodePath, encoding: .utf8), clusterPEM: String(contentsOfFile: clusterPath, encoding: .utf8))
        } catch {
            throw CLIError("cannot load this node's identity from \(path) (\(error)): the directory may be damaged; 'lansync init' a new one")
        }
    }

    /// Tells a node running on this directory that the replica changed, so it pushes the change
    /// at once. Best effort: without a node, or if it does not answer, nothing happens (a running
    /// node notices within a second anyway).
    func nudgeNode() {
        guard FileManager.default.fileExists(atPath: controlSocketPath) else { return }
        _ = ControlClient.request(.object([("op", .string("nudge"))]), path: controlSocketPath, timeoutSeconds: 1)
    }

    /// Says so when a write had to start a new writer because this replica was found rolled back
    /// (a restored backup or snapshot): the user should know that peers will send back what the
    /// restore lost. A new writer after a reboot is routine and goes unsaid.
    func noteNewWriter(_ store: ReplicaStore, issued dot: Dot) {
        guard dot.counter == 1, let writer = try? store.writers().last, writer.id == dot.node else { return }
        switch writer.reason {
        case .restored:
            FileIO.note("this replica holds less than it had written before (restored from a backup or snapshot?): it now writes as \(dot.node.short), and peers will send back what the restore lost")
        case .witness:
            FileIO.note("a peer holds more of this replica's writes than it does (restored from a backup or snapshot?): it now writes as \(dot.node.short), and peers will send back what it lost")
        case .`init`, .unproven, .copied, .repair:
            break
        }
    }

    /// Identifies where this directory lives (machine id and canonical path), so a copy of it is
    /// recognised: two copies must never write under one node id.
    var fingerprint: String {
        let canonical = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? path
        let real = URL(fileURLWithPath: canonical).resolvingSymlinksInPath().standardizedFileURL.path
        return Self.machineID + ":" + real
    }

    static let machineID: String = {
        for file in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
            if let id = try? String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines), !id.isEmpty {
                return id
            }
        }
        return ProcessInfo.processInfo.hostName
    }()

    /// Opens the replica. If the directory was copied (or moved) from where it was created, this
    /// copy first takes a new node identity, issued with the cluster secret it holds, and says so.
    func open() throws -> ReplicaStore {
        let store: ReplicaStore
        do { store = try ReplicaStore.open(path: replicaPath) } catch { throw CLIError(error) }
        let info: ReplicaInfo
        do { info = try store.info() } catch { throw CLIError(error) }
        if info.fingerprint != fingerprint {
            try reidentify(store, info: info)
        }
        return store
    }

    private func reidentify(_ store: ReplicaStore, info: ReplicaInfo) throws {
        let secret: ClusterSecret
        do {
            secret = try ClusterSecret(pem: String(contentsOfFile: clusterPath, encoding: .utf8))
        } catch let error as IdentityError {
            throw CLIError("\(clusterPath): \(error.message)")
        } catch {
            throw CLIError("cannot read \(clusterPath): restore it from the cluster secret file")
        }
        let identity = try secret.issueNode(name: info.nodeName)
        try FileIO.writeSecret(try identity.pem(), to: nodePath, replace: true)
        do { try store.adoptIdentity(nodeID: identity.nodeID, fingerprint: fingerprint) } catch { throw CLIError(error) }
        FileIO.note("\(path) was copied or moved from where it was created; this replica now writes as node \(identity.nodeID.short) (was \(info.nodeID.short)), so the copies never share an id")
    }
}

/// Small file helpers with the permissions secrets need.
enum FileIO {
    /// Writes a file readable by its owner only (0600). Without `replace`, refuses to overwrite.
    static func writeSecret(_ text: String, to path: String, replace: Bool = false) throws {
        let flags = O_WRONLY | O_CREAT | (replace ? O_TRUNC : O_EXCL)
        let fd = Foundation.open(path, flags, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { throw CLIError("\(path) already exists: choose another file name, or remove it first") }
            throw CLIError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        fchmod(fd, 0o600)
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw CLIError("cannot write \(path): \(String(cString: strerror(errno)))") }
            written += n
        }
        guard fsync(fd) == 0 else { throw CLIError("cannot write \(path): \(String(cString: strerror(errno)))") }
    }

    static func note(_ message: String) {
        FileHandle.standardError.write(Data("lansync: note: \(message)\n".utf8))
    }

    static var stdoutIsTerminal: Bool { isatty(1) == 1 }
    static var stderrIsTerminal: Bool { isatty(2) == 1 }
}

/// The wall clock, read only here and passed into the core.
enum WallClock {
    static var milliseconds: UInt64 { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) }
}
