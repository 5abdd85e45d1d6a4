import Testing

@testable import LansyncPostgres

/// Connection URIs as libpq writes them, and the ones lansync refuses.
@Suite struct PostgresLocationTests {
    @Test func aProductionURIWithAPrimaryAndItsStandby() throws {
        let location = try PostgresLocation(
            parsing:
                "postgres://relay:s%40cret@db1.lan:5433,db2.lan/lansync?target_session_attrs=read-write&sslmode=require"
        )
        #expect(location.hosts == [.init(name: "db1.lan", port: 5433), .init(name: "db2.lan", port: 5432)])
        #expect(location.user == "relay")
        #expect(location.password == "s@cret")
        #expect(location.database == "lansync")
        #expect(location.readWrite)
        #expect(location.tls == .require)
        #expect(
            location.description
                == "postgres://relay@db1.lan:5433,db2.lan:5432/lansync?target_session_attrs=read-write&sslmode=require",
            "the password never shows"
        )
    }

    @Test func defaultsAndASocketDirectory() throws {
        let plain = try PostgresLocation(parsing: "postgresql://127.0.0.1")
        #expect(plain.user == "postgres" && plain.database == "postgres" && plain.password == nil)
        #expect(plain.hosts == [.init(name: "127.0.0.1", port: 5432)])
        #expect(!plain.readWrite && plain.tls == .prefer)
        let socket = try PostgresLocation(parsing: "postgres://me@:6000/db?host=/run/postgresql")
        #expect(socket.hosts == [.init(name: "/run/postgresql", port: 6000)])
        let v6 = try PostgresLocation(parsing: "postgres://[::1]:5544/x")
        #expect(v6.hosts == [.init(name: "::1", port: 5544)])
    }

    @Test(arguments: [
        ("mysql://h/db", "it must start with postgres://"),
        ("postgres:///db", "no host"),
        ("postgres://:5432/db", "no host"),
        ("postgres://h:99999/db", "'h:99999' is not HOST or HOST:PORT"),
        ("postgres://h/db?sslmode=verify-full", "sslmode may be disable, prefer or require"),
        ("postgres://h/db?application=x", "lansync does not know the parameter 'application'"),
        ("postgres://h/db?target_session_attrs", "'target_session_attrs' is not PARAM=VALUE"),
    ])
    func refusedWithTheReason(uri: String, reason: String) {
        #expect(throws: PostgresLocation.Malformed.self) { try PostgresLocation(parsing: uri) }
        do {
            _ = try PostgresLocation(parsing: uri)
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }
}
