/// Where a PostgreSQL database is, read from a connection URI as libpq writes them:
/// `postgres://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...][/DATABASE][?PARAM=VALUE&...]`.
///
/// Several hosts are tried in order, as libpq does; `target_session_attrs=read-write` skips a
/// host whose server is read-only (a streaming replica), so a URI that lists a primary and its
/// standby reaches whichever is the primary now. Other parameters understood: `host=/DIR` (a
/// Unix socket directory instead of TCP), `sslmode` (`disable`, `prefer`, `require`), and
/// `connect_timeout` (seconds). Anything else is refused, so a typo never goes unnoticed.
///
/// Guarantees: ``init(parsing:)`` either returns a location with at least one host and ports in
/// 1...65535, or throws a ``PostgresLocation/Malformed`` that says what was wrong.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    /// One server to try, in the order the URI gives them.
    public struct Host: Sendable, Equatable {
        /// A host name or address, or the directory of a Unix socket (starting with `/`).
        public var name: String
        public var port: Int
    }

    /// libpq's `sslmode`, of which lansync knows three: never, when the server offers it, always.
    public enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    public var hosts: [Host]
    public var user: String
    /// The URI's password, or `PGPASSWORD`'s (``readCredentials(environment:home:)``).
    public var password: String?
    /// libpq's password file, asked per host when there is no password above.
    public var passwordFile: PostgresPasswordFile?
    public var database: String
    /// Only a server that accepts writes will do (`target_session_attrs=read-write`).
    public var readWrite: Bool
    public var tls: TLSMode
    public var connectTimeout: Duration

    /// What is wrong with a connection URI.
    public struct Malformed: Error, CustomStringConvertible, Equatable {
        public let description: String
    }

    public init(parsing text: String, defaultUser: String = "postgres") throws(Malformed) {
        func fail(_ why: String) -> Malformed {
            Malformed(description: "not a PostgreSQL connection URI (\(why)): give postgres://USER@HOST:PORT/DATABASE")
        }
        var rest = Substring(text)
        guard let scheme = ["postgresql://", "postgres://"].first(where: { rest.hasPrefix($0) }) else {
            throw fail("it must start with postgres://")
        }
        rest = rest.dropFirst(scheme.count)
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var user = defaultUser
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                user = Self.decoded(credentials[..<colon])
                password = Self.decoded(credentials[credentials.index(after: colon)...])
            } else {
                user = Self.decoded(credentials)
            }
            guard !user.isEmpty else { throw fail("the user name is empty") }
        }
        var hosts: [Host] = []
        if !rest.isEmpty {
            for part in rest.split(separator: ",", omittingEmptySubsequences: false) {
                guard let host = Self.host(part) else { throw fail("'\(part)' is not HOST or HOST:PORT") }
                hosts.append(host)
            }
        }
        self.user = user
        self.password = password
        self.database = path.isEmpty ? user : Self.decoded(path)
        readWrite = false
        tls = .prefer
        connectTimeout = .seconds(10)
        self.hosts = hosts
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map { Self.decoded($0) }
            guard kv.count == 2 else { throw fail("'\(pair)' is not PARAM=VALUE") }
            try apply(kv[0], kv[1], fail: fail)
        }
        guard !self.hosts.isEmpty, self.hosts.allSatisfy({ !$0.name.isEmpty }) else { throw fail("no host") }
    }

    /// What libpq reads besides the URI, so that a password need not be on the command line:
    /// `PGPASSWORD` when the URI has none, then the password file (``PostgresPasswordFile``).
    /// Returns a warning to log when the password file was left unread; throws when
    /// `PGPASSFILE` names a file that cannot be read.
    public mutating func readCredentials(environment: [String: String], home: String?) throws(Malformed) -> String? {
        if password == nil, let fromEnvironment = environment["PGPASSWORD"], !fromEnvironment.isEmpty {
            password = fromEnvironment
        }
        guard password == nil else { return nil }
        switch try PostgresPasswordFile.load(environment: environment, home: home) {
        case .read(let file, _):
            passwordFile = file
            return nil
        case .none: return nil
        case .ignored(let why): return why
        }
    }

    /// The password to give `host`: the URI's or `PGPASSWORD`'s, else the password file's line
    /// for it; nil for none.
    public func password(for host: Host) -> String? {
        password ?? passwordFile?.password(for: host, database: database, user: user)
    }

    private mutating func apply(_ key: String, _ value: String, fail: (String) -> Malformed) throws(Malformed) {
        switch key {
        case "target_session_attrs":
            guard value == "read-write" || value == "any" else {
                throw fail("target_session_attrs may be read-write or any")
            }
            readWrite = value == "read-write"
        case "sslmode":
            guard let mode = TLSMode(rawValue: value) else { throw fail("sslmode may be disable, prefer or require") }
            tls = mode
        case "connect_timeout":
            guard let seconds = Int(value), seconds > 0 else { throw fail("connect_timeout is a number of seconds") }
            connectTimeout = .seconds(seconds)
        case "host":
            guard value.hasPrefix("/") else { throw fail("host= takes a Unix socket directory, starting with /") }
            let port = hosts.first?.port ?? 5432
            hosts = [Host(name: value, port: port)]
        default:
            throw fail("lansync does not know the parameter '\(key)'")
        }
    }

    private static func host(_ text: Substring) -> Host? {
        var name = text
        var port = 5432
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            name = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let p = Int(after.dropFirst()) else { return nil }
                port = p
            }
        } else if let colon = text.lastIndex(of: ":") {
            name = text[..<colon]
            guard let p = Int(text[text.index(after: colon)...]) else { return nil }
            port = p
        }
        // An empty name is allowed here for `@:PORT/DB?host=/DIR` (a socket directory given apart).
        guard (1...65535).contains(port) else { return nil }
        return Host(name: decoded(name), port: port)
    }

    /// Percent-decoding, as URIs write `@`, `:` or `/` in a password.
    private static func decoded(_ text: Substring) -> String {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i < utf8.endIndex {
            let byte = utf8[i]
            if byte == UInt8(ascii: "%"), let j = utf8.index(i, offsetBy: 2, limitedBy: utf8.endIndex),
                j < utf8.endIndex,
                let value = UInt8(String(decoding: utf8[utf8.index(after: i)...j], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                i = utf8.index(after: j)
            } else {
                bytes.append(byte)
                i = utf8.index(after: i)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The URI without its password, for logs and `status`.
    public var description: String {
        let hostList = hosts.map {
            $0.name.hasPrefix("/") ? "" : ($0.name.contains(":") ? "[\($0.name)]:\($0.port)" : "\($0.name):\($0.port)")
        }
        .joined(separator: ",")
        var text = "postgres://\(user)@\(hostList)/\(database)"
        var params: [String] = []
        if let socket = hosts.first(where: { $0.name.hasPrefix("/") }) { params.append("host=\(socket.name)") }
        if readWrite { params.append("target_session_attrs=read-write") }
        if tls != .prefer { params.append("sslmode=\(tls.rawValue)") }
        if !params.isEmpty { text += "?" + params.joined(separator: "&") }
        return text
    }
}
