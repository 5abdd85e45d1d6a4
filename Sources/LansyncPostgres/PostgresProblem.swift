import PostgresNIO

/// A PostgreSQL failure said in one line: the server's own message and SQLSTATE when it sent
/// one, else what went wrong with the connection. (postgres-nio's `PSQLError` describes itself
/// generically on purpose, so as not to leak query text into logs; this keeps that promise and
/// still says what an operator needs.)
public struct PostgresProblem: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) { self.description = description }

    /// The one line for any error a query or connection threw.
    public init(_ error: any Error) {
        if let problem = error as? PostgresProblem {
            self = problem
            return
        }
        if let transaction = error as? PostgresTransactionError {
            let inner = transaction.closureError ?? transaction.beginError ?? transaction.commitError
            self.init(inner.map { PostgresProblem($0).description } ?? "a transaction failed")
            return
        }
        guard let psql = error as? PSQLError else {
            self.init("\(error)")
            return
        }
        if let info = psql.serverInfo, let message = info[.message] {
            let state = info[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
            // 28P01 and 28000: the password was wrong or missing, or the user may not log in.
            // 42501: a role without a right it needs, such as making the tables or, on a ledger
            // made by an older relay, adding its `lease` column and index (its owner's right).
            let what =
                switch info[.sqlState] {
                case let state? where state.hasPrefix("28"):
                    ": give the user's password in the URI, in PGPASSWORD, or in a password file (~/.pgpass, or the file PGPASSFILE names; Docs/RELAY.md)"
                case "42501"?:
                    ": the relay's user must be allowed to create tables in the schema, and the first relay of a new version must run as the owner of the lansync_ tables (Docs/RELAY.md)"
                default: ""
                }
            self.init("the server said: \(message)\(state)\(what)")
            return
        }
        let underlying = psql.underlying.map { ": \($0)" } ?? ""
        switch psql.code {
        case .connectionError: self.init("cannot connect\(underlying)")
        case .serverClosedConnection, .uncleanShutdown: self.init("the server closed the connection\(underlying)")
        case .clientClosedConnection: self.init("the connection was closed\(underlying)")
        default: self.init("\(psql.code)\(underlying)")
        }
    }
}
