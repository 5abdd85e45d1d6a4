import Logging
import NIOCore
import NIOSSL
import PostgresNIO

/// Opens connections to a ``PostgresLocation`` the way libpq does: its hosts in order, the first
/// that answers (and, with `target_session_attrs=read-write`, takes writes), with the location's
/// TLS mode and password. The shared authority and the relay's replica both connect through it.
///
/// Future-based, so that a caller on a thread of its own (the replica's blocking calls) can wait
/// for it as well as an async one.
struct PostgresConnector: Sendable {
    let location: PostgresLocation
    let logger: Logger

    /// What a connection must go through before it is of use (the tables made, settings set):
    /// a host where it fails is left for the next, as one that does not answer.
    typealias Preparation = @Sendable (PostgresConnection) -> EventLoopFuture<Void>

    /// A connection to the first host of use, prepared; a ``PostgresProblem`` naming each host's
    /// failure when none is. Each host has the location's connect timeout to answer and
    /// `settingUp` to be checked and prepared.
    func connect(
        id: Int,
        on eventLoop: any EventLoop = PostgresConnection.defaultEventLoopGroup.any(),
        settingUp: TimeAmount = PostgresConnector.settingUp,
        prepare: Preparation? = nil
    ) -> EventLoopFuture<PostgresConnection> {
        attempt(hosts: location.hosts[...], failures: [], id: id, on: eventLoop, settingUp: settingUp, prepare: prepare)
    }

    private func attempt(
        hosts: ArraySlice<PostgresLocation.Host>,
        failures: [String],
        id: Int,
        on eventLoop: any EventLoop,
        settingUp: TimeAmount,
        prepare: Preparation?
    ) -> EventLoopFuture<PostgresConnection> {
        guard let host = hosts.first else {
            return eventLoop.makeFailedFuture(PostgresProblem(failures.joined(separator: "; ")))
        }
        return open(host, id: id, on: eventLoop, settingUp: settingUp, prepare: prepare).flatMapError { error in
            attempt(
                hosts: hosts.dropFirst(),
                failures: failures + [
                    "\(host.name):\(host.port)\(error is ReadOnly ? " is read-only" : ": \(PostgresProblem(error))")"
                ],
                id: id,
                on: eventLoop,
                settingUp: settingUp,
                prepare: prepare
            )
        }
    }

    /// The server is in recovery (a standby) and the location wants one that takes writes.
    private struct ReadOnly: Error {}

    /// One host: connected, (for a read-write location) asked whether it takes writes, and
    /// prepared; a connection of no use is closed before the failure is passed on.
    private func open(
        _ host: PostgresLocation.Host,
        id: Int,
        on eventLoop: any EventLoop,
        settingUp: TimeAmount,
        prepare: Preparation?
    ) -> EventLoopFuture<PostgresConnection> {
        let opened: EventLoopFuture<PostgresConnection>
        do {
            opened = PostgresConnection.connect(
                on: eventLoop,
                configuration: try configuration(for: host),
                id: id,
                logger: logger
            )
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let (logger, readWrite) = (self.logger, location.readWrite)
        return opened.flatMap { connection in
            // Watched: a set-up query dropped as the server closes would leave the caller waiting
            // for good (``WatchedConnection``), holding whatever it holds (the authority's turn to
            // decide), where the next host should be tried.
            WatchedConnection(connection).answer(within: settingUp) { (ready: EventLoopPromise<Void>) in
                let writable: EventLoopFuture<Void> =
                    readWrite
                    ? connection.query("SHOW transaction_read_only", logger: logger).flatMapThrowing { result in
                        guard let row = result.rows.first, try row.decode(String.self) == "off" else {
                            throw ReadOnly()
                        }
                    } : eventLoop.makeSucceededVoidFuture()
                writable.flatMap { prepare?(connection) ?? eventLoop.makeSucceededVoidFuture() }.cascade(to: ready)
            }
            .map { connection }
            .flatMapError { error in connection.close().flatMapThrowing { throw error } }
        }
    }

    /// How long a new connection's set-up (the read-only check, the preparation: settings, the
    /// authority's tables, which wait for another relay making them) may take before the host
    /// counts as one that does not answer: long, as the authority's preparation runs in a task,
    /// which may wait for a thread (``PostgresAuthority/answerBound``); a connection that closes
    /// fails its set-up at once.
    static let settingUp = TimeAmount.minutes(5)

    private func configuration(for host: PostgresLocation.Host) throws -> PostgresConnection.Configuration {
        // No password known is given as an empty one: a server that asks for one then refuses it
        // with its own message (SQLSTATE 28P01), and closes. With none, postgres-nio 1.33 fails
        // on its side ("authMechanismRequiresPassword") and leaves the connection open (its
        // debug build asserts on it). PostgreSQL never takes an empty password, so nothing else
        // changes; a server that trusts the user never asks.
        let password = location.password(for: host) ?? ""
        var configuration: PostgresConnection.Configuration
        if host.name.hasPrefix("/") {
            configuration = .init(
                unixSocketPath: "\(host.name)/.s.PGSQL.\(host.port)",
                username: location.user,
                password: password,
                database: location.database
            )
        } else {
            // As libpq's prefer and require: encrypted, the server's certificate not verified.
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = .none
            let mode: PostgresConnection.Configuration.TLS =
                switch location.tls {
                case .disable: .disable
                case .prefer: .prefer(try NIOSSLContext(configuration: tls))
                case .require: .require(try NIOSSLContext(configuration: tls))
                }
            configuration = .init(
                host: host.name,
                port: host.port,
                username: location.user,
                password: password,
                database: location.database,
                tls: mode
            )
        }
        configuration.options.connectTimeout = .seconds(location.connectTimeout.components.seconds)
        return configuration
    }
}
