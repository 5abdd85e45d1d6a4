import LansyncTransport

/// A failure of the host layer (the data directory, its files, import input): one line that says
/// what was wrong and what to do. Nothing was changed when it is thrown.
public struct HostError: CodedError, Sendable, Equatable {
    public let description: String
    /// What kind of failure it is: bad input unless said otherwise (``ErrorCode/overLimit`` for
    /// input that is well formed but holds what lansync cannot keep, such as an integer past 64
    /// bits).
    public var code: ErrorCode
    /// The edit the core refused, when this error reports one (an import's line): front ends
    /// add their advice for it.
    public var cause: EditError?

    public init(_ description: String, code: ErrorCode = .badInput) {
        self.description = description
        self.code = code
    }

    /// What a network error (SwiftNIO's, TLS's) says, in one line.
    public static func describing(_ error: any Error) -> String { TransportError.describing(error) }
}
