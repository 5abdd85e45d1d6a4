import Foundation
import LansyncTestSupport
import Logging
import Testing

@testable import LansyncPostgres

/// libpq's password file and `PGPASSWORD`, so that `--authority` need not carry a password.
@Suite struct PostgresPasswordFileTests {
    static let host = PostgresLocation.Host(name: "db1.example", port: 5432)

    /// A password file holding `text`, mode 0600, in a new temporary directory (the caller
    /// removes it).
    static func passwordFile(named name: String, _ text: String) throws -> (directory: String, path: String) {
        let directory = NSTemporaryDirectory() + "lansync-pgpass-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return (directory, path)
    }

    static func authority(_ location: PostgresLocation, holder: String) -> PostgresAuthority {
        PostgresAuthority(
            location: location,
            name: "settle test-cluster",
            holder: holder,
            lease: .seconds(120),
            logger: Logger(label: "test")
        )
    }

    @Test func theFirstLineThatMatchesWinsWithWildcardsAndEscapes() {
        let file = PostgresPasswordFile(
            contents: """
                # comments and short lines are skipped
                db1.example:5432
                db1.example:5432:lansync:keeper:first\\:one
                db1.example:5432:*:keeper:second
                /run/postgresql:5432:*:keeper:socket-dir
                *:*:*:*:fallback\\\\
                """
        )
        #expect(file.password(for: Self.host, database: "lansync", user: "keeper") == "first:one")
        #expect(file.password(for: Self.host, database: "other", user: "keeper") == "second")
        #expect(file.password(for: Self.host, database: "other", user: "someone") == "fallback\\")
        let socket = PostgresLocation.Host(name: "/run/postgresql", port: 5432)
        #expect(file.password(for: socket, database: "x", user: "keeper") == "socket-dir")
        #expect(
            PostgresPasswordFile(contents: "localhost:*:*:keeper:local").password(
                for: socket,
                database: "x",
                user: "keeper"
            ) == "local"
        )
        #expect(
            PostgresPasswordFile(contents: "db2.example:*:*:*:no").password(for: Self.host, database: "x", user: "y")
                == nil
        )
    }

    @Test func theURIThenPGPASSWORDThenTheFileAndAFileOthersReadIsLeftUnread() throws {
        let (directory, path) = try Self.passwordFile(named: ".pgpass", "*:*:*:keeper:from-file\n")
        defer { try? FileManager.default.removeItem(atPath: directory) }

        var inURI = try PostgresLocation(parsing: "postgres://keeper:in-uri@db1.example/lansync")
        #expect(try inURI.readCredentials(environment: ["PGPASSWORD": "env"], home: directory) == nil)
        #expect(inURI.password(for: Self.host) == "in-uri")

        var fromEnvironment = try PostgresLocation(parsing: "postgres://keeper@db1.example/lansync")
        #expect(try fromEnvironment.readCredentials(environment: ["PGPASSWORD": "env"], home: directory) == nil)
        #expect(fromEnvironment.password(for: Self.host) == "env")

        var fromHome = try PostgresLocation(parsing: "postgres://keeper@db1.example/lansync")
        #expect(try fromHome.readCredentials(environment: [:], home: directory) == nil)
        #expect(fromHome.password(for: Self.host) == "from-file")
        // The URI's own form stays without a password, as logs and status show it.
        #expect(!fromHome.description.contains("from-file"))

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        var exposed = try PostgresLocation(parsing: "postgres://keeper@db1.example/lansync")
        let warning = try exposed.readCredentials(environment: ["PGPASSFILE": path], home: nil)
        #expect(
            warning
                == "the password file \(path) can be read by others (mode 644), so it is not read: chmod 600 \(path)"
        )
        #expect(exposed.password(for: Self.host) == nil)

        var nowhere = try PostgresLocation(parsing: "postgres://keeper@db1.example/lansync")
        #expect(try nowhere.readCredentials(environment: [:], home: directory + "/absent") == nil)
        #expect(nowhere.password(for: Self.host) == nil)
        #expect(throws: PostgresLocation.Malformed.self) {
            try nowhere.readCredentials(environment: ["PGPASSFILE": directory + "/absent"], home: nil)
        }
    }

    /// On a real server that asks for a password: refused without one, in with the file's.
    @Test func aServerThatAsksForAPasswordGetsTheFilesOne() async throws {
        let server = try TemporaryPostgres()
        defer { server.stop() }
        try server.requirePassword(user: "keeper", password: "s3cret:x")
        _ = try server.sql("CREATE DATABASE relays OWNER keeper")
        let uri = "postgres://keeper@127.0.0.1:\(server.port)/relays?sslmode=disable"
        let (directory, path) = try Self.passwordFile(named: "pgpass", "127.0.0.1:\(server.port):*:keeper:s3cret\\:x\n")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var withFile = try PostgresLocation(parsing: uri)
        #expect(try withFile.readCredentials(environment: ["PGPASSFILE": path], home: nil) == nil)

        let without = Self.authority(try PostgresLocation(parsing: uri), holder: "without")
        let with = Self.authority(withFile, holder: "with")
        await without.lookNow()
        await with.lookNow()
        let refused = await without.standing
        let admitted = await with.standing
        await without.release()
        await with.release()
        guard case .unreachable(let why) = refused else {
            Issue.record("expected the relay without a password to be refused, got \(refused)")
            return
        }
        #expect(why.contains("password authentication failed") && why.contains("PGPASSWORD"), "\(why)")
        #expect(admitted == .holding(epoch: 1), "\(server.log)")

        // Let in, but not allowed to make the tables: said, and the connection closed (a
        // connection left open is what postgres-nio's debug build stops on).
        var elsewhere = try PostgresLocation(
            parsing: "postgres://keeper@127.0.0.1:\(server.port)/postgres?sslmode=disable"
        )
        #expect(try elsewhere.readCredentials(environment: ["PGPASSFILE": path], home: nil) == nil)
        let barred = Self.authority(elsewhere, holder: "barred")
        await barred.lookNow()
        let standing = await barred.standing
        await barred.release()
        guard case .unreachable(let reason) = standing else {
            Issue.record("expected a user that may not create the tables to be refused, got \(standing)")
            return
        }
        #expect(reason.contains("permission denied"), "\(reason)")
    }
}
