import Crypto
public import Foundation
import Glibc

extension DataDirectory {
    /// The folder of one-time login codes for the web page (`lansync ui`), mode 0700.
    var uiLoginFolder: String { path + "/ui-logins" }

    /// How long a code from `lansync ui` logs in: long enough to click, short enough that a URL
    /// left in a terminal's scrollback is of no use later.
    public static let uiLoginLifetime: TimeInterval = 300

    /// A one-time code that logs the web page in once (`lansync ui`): 128 random bits as 32 hex
    /// digits. Only its SHA-256 is kept, as the name of an empty file in `ui-logins/`, so that
    /// redeeming it is one `unlink`, which succeeds for one caller only. Codes past their lifetime
    /// are swept here.
    public func makeUILoginCode(now: Date = Date()) throws -> String {
        let folder = uiLoginFolder
        try Self.makePrivateFolder(folder)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let file = folder + "/" + name
            if let made = Self.modification(of: file), now.timeIntervalSince(made) > Self.uiLoginLifetime {
                unlink(file)
            }
        }
        let code = Self.randomHex(bytes: 16)
        try Self.makeMarker(folder + "/" + Self.digest(code))
        return code
    }

    /// Makes `folder` (mode 0700) unless it exists.
    static func makePrivateFolder(_ folder: String) throws {
        if mkdir(folder, 0o700) != 0, errno != EEXIST {
            throw HostError(
                "cannot make \(folder): \(String(cString: strerror(errno))); check the data directory's permissions"
            )
        }
    }

    /// Creates the empty file `file` (mode 0600), which must not exist: its name and time are
    /// what it records.
    static func makeMarker(_ file: String) throws {
        let fd = Glibc.open(file, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        guard fd >= 0 else {
            throw HostError(
                "cannot write \(file): \(String(cString: strerror(errno))); check the data directory's permissions"
            )
        }
        close(fd)
    }

    /// Redeems a code from ``makeUILoginCode(now:)``: true once, for a code made less than
    /// ``uiLoginLifetime`` ago; false for anything else (unknown, used, expired, not a code).
    public func redeemUILoginCode(_ code: String, now: Date = Date()) -> Bool {
        guard code.utf8.count == 32, code.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return false }
        let file = uiLoginFolder + "/" + Self.digest(code)
        guard let made = Self.modification(of: file) else { return false }
        // The unlink is what makes it one-time: of two requests with the same code, one removes
        // the file and the other fails.
        guard unlink(file) == 0 else { return false }
        return now.timeIntervalSince(made) <= Self.uiLoginLifetime
    }

    static func digest(_ code: String) -> String {
        SHA256.hash(data: Data(code.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func modification(of file: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: file))?[.modificationDate] as? Date
    }
}

/// One logged-in web page (`lansync ui`'s link, or a login with its code): what `status` lists.
public struct UISession: Sendable, Equatable {
    /// The first characters of the session's digest: enough to tell sessions apart, useless to
    /// log in with.
    public let id: String
    /// When it logged in (Unix milliseconds).
    public let started: UInt64
}

extension DataDirectory {
    /// The folder of the web page's sessions, mode 0700: one empty file per session, named by
    /// the SHA-256 of its token, made when it logged in.
    var uiSessionFolder: String { path + "/ui-sessions" }

    /// How long a page stays logged in without logging out: 30 days.
    public static let uiSessionLifetime: TimeInterval = 30 * 86_400

    /// Starts a session for a page that logged in: a new bearer token (256 random bits as 64 hex
    /// digits) that the API takes like its own token until ``endUISession(_:)`` or 30 days. Only
    /// its digest is kept.
    public func startUISession() throws -> String {
        try Self.makePrivateFolder(uiSessionFolder)
        let token = Self.randomHex(bytes: 32)
        try Self.makeMarker(uiSessionFolder + "/" + Self.digest(token))
        return token
    }

    /// True if `token` is a session that logged in less than 30 days ago and has not ended.
    public func isUISession(_ token: some Collection<UInt8>, now: Date = Date()) -> Bool {
        guard token.count == 64, token.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return false }
        let file = uiSessionFolder + "/" + Self.digest(String(decoding: token, as: UTF8.self))
        guard let made = Self.modification(of: file) else { return false }
        return now.timeIntervalSince(made) <= Self.uiSessionLifetime
    }

    /// Ends the session `token` (the page's "Log out"): from then on it is refused. False if it
    /// was no session.
    @discardableResult
    public func endUISession(_ token: String) -> Bool {
        guard isUISession(Array(token.utf8), now: .distantPast) else { return false }
        return unlink(uiSessionFolder + "/" + Self.digest(token)) == 0
    }

    /// The sessions logged in now, oldest first; those past their 30 days are swept here.
    public func uiSessions(now: Date = Date()) -> [UISession] {
        let folder = uiSessionFolder
        var sessions: [UISession] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let file = folder + "/" + name
            guard let made = Self.modification(of: file) else { continue }
            if now.timeIntervalSince(made) > Self.uiSessionLifetime {
                unlink(file)
                continue
            }
            sessions.append(UISession(id: String(name.prefix(8)), started: UInt64(made.timeIntervalSince1970 * 1000)))
        }
        return sessions.sorted { ($0.started, $0.id) < ($1.started, $1.id) }
    }
}
