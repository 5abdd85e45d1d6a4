import Foundation

/// libpq's password file (`~/.pgpass`, or the file `PGPASSFILE` names), so that a relay's
/// `--authority` URI need not carry its password on the command line, where `ps` shows it.
///
/// Each line is `HOST:PORT:DATABASE:USER:PASSWORD`; `*` in any of the first four matches
/// anything, `\:` and `\\` write a colon and a backslash, `#` starts a comment, and the first
/// line that matches wins, as in libpq. A host given as a Unix socket directory matches
/// `localhost` or the directory itself.
///
/// Guarantees: ``init(contents:)`` never fails (a line without five fields is skipped, as libpq
/// skips it); ``load(environment:home:)`` reads no file that others can read (libpq ignores such
/// a file too), and says why it read none.
public struct PostgresPasswordFile: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        var host: String
        var port: String
        var database: String
        var user: String
        var password: String
    }

    var entries: [Entry]

    public init(contents: String) {
        entries = contents.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            guard !line.hasPrefix("#") else { return nil }
            let fields = Self.fields(line)
            guard fields.count == 5 else { return nil }
            return Entry(host: fields[0], port: fields[1], database: fields[2], user: fields[3], password: fields[4])
        }
    }

    /// The password of the first line that matches, or nil.
    public func password(for host: PostgresLocation.Host, database: String, user: String) -> String? {
        func matches(_ pattern: String, _ candidates: String...) -> Bool {
            pattern == "*" || candidates.contains(pattern)
        }
        let hosts = host.name.hasPrefix("/") ? [host.name, "localhost"] : [host.name]
        return entries.first { entry in
            (entry.host == "*" || hosts.contains(entry.host)) && matches(entry.port, String(host.port))
                && matches(entry.database, database) && matches(entry.user, user)
        }?.password
    }

    /// What ``load(environment:home:)`` found.
    public enum Outcome: Sendable, Equatable {
        /// The file was read.
        case read(PostgresPasswordFile, path: String)
        /// There is no file (the default one may be absent).
        case none
        /// A file that others can read, left unread as libpq leaves it: the reason, for the log.
        case ignored(String)
    }

    /// The file `PGPASSFILE` names, else `HOME/.pgpass`. Throws only when `PGPASSFILE` names a
    /// file that cannot be read: that is a mistake worth stopping for.
    public static func load(
        environment: [String: String],
        home: String?
    ) throws(PostgresLocation.Malformed) -> Outcome {
        let named = environment["PGPASSFILE"].flatMap { $0.isEmpty ? nil : $0 }
        guard let path = named ?? home.map({ "\($0)/.pgpass" }) else { return .none }
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue
        else {
            guard named == nil else {
                throw PostgresLocation.Malformed(
                    description: "PGPASSFILE names \(path), which is not there: fix the path, or unset PGPASSFILE"
                )
            }
            return .none
        }
        guard mode & 0o077 == 0 else {
            return .ignored(
                "the password file \(path) can be read by others (mode \(String(mode, radix: 8))), so it is not read: chmod 600 \(path)"
            )
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw PostgresLocation.Malformed(
                description: "cannot read the password file \(path): check its owner and that it is text"
            )
        }
        return .read(PostgresPasswordFile(contents: text), path: path)
    }

    /// A line's colon-separated fields, with `\:` and `\\` undone.
    static func fields(_ line: Substring) -> [String] {
        var fields: [String] = []
        var current = ""
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" && fields.count < 4 {
                fields.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        fields.append(current)
        return fields
    }
}
