import Foundation
import LansyncReplica
import LansyncStore
import Synchronization

extension DataDirectory {
    /// The file that holds the local API's bearer token (mode 0600).
    public var apiTokenPath: String { path + "/api-token" }

    /// The local API's bearer token (Docs/API.md, "Auth"): 256 random bits as 64 hex digits,
    /// made at `init` and `join`; a directory made before the API gets one on first use. Whoever
    /// can read the data directory can use the API, and nobody else.
    public func apiToken() throws -> String {
        if let problem = FileAccess.readProblem(apiTokenPath) { throw HostError(problem) }
        if let text = try? String(contentsOfFile: apiTokenPath, encoding: .utf8) {
            let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard token.count == 64, token.allSatisfy(\.isHexDigit) else {
                throw HostError(
                    "\(apiTokenPath) does not hold an API token: remove it, and 'lansync api-token' makes a new one"
                )
            }
            return token
        }
        let token = Self.randomHex(bytes: 32)
        do {
            try SecretFile.write(token + "\n", to: apiTokenPath)
        } catch {
            // Another process made it first: use theirs.
            if let text = try? String(contentsOfFile: apiTokenPath, encoding: .utf8) {
                return text.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            throw error
        }
        return token
    }

    /// Replaces the API token with a new one and returns it: the old one stops working at once,
    /// a running node included (it reads the file again when it changes, ``APITokenFile``). The
    /// page's sessions are separate secrets and stay logged in.
    public func rotateAPIToken() throws -> String {
        let token = Self.randomHex(bytes: 32)
        try SecretFile.write(token + "\n", to: apiTokenPath, replace: true)
        return token
    }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// The API token as a running node checks it: read from the data directory, and read again
/// whenever the file changes (`lansync api-token --rotate`), so a rotated token takes effect at
/// the next request without a restart. Thread-safe.
public final class APITokenFile: Sendable {
    let directory: DataDirectory
    private let cached: Mutex<(token: [UInt8], stamp: FileStamp?)>

    public init(directory: DataDirectory) throws {
        self.directory = directory
        cached = Mutex((Array(try directory.apiToken().utf8), FileStamp(directory.apiTokenPath)))
    }

    /// The current token (a `stat` per call; the file is read again only when it changed).
    public var current: [UInt8] {
        let path = directory.apiTokenPath
        let stamp = FileStamp(path)
        return cached.withLock { state in
            if stamp != state.stamp, let token = try? directory.apiToken() {
                state = (Array(token.utf8), stamp)
            }
            return state.token
        }
    }
}

/// A file's identity and change time, to tell that it was replaced or written.
struct FileStamp: Equatable, Sendable {
    let inode: UInt64
    let modified: Int64
    let nanoseconds: Int64

    init?(_ path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        inode = UInt64(info.st_ino)
        modified = Int64(info.st_mtim.tv_sec)
        nanoseconds = Int64(info.st_mtim.tv_nsec)
    }
}
