import LansyncTransport

/// A failure of the host layer (the data directory, its files, import input): one line that says
/// what was wrong and what to do. Nothing was changed when it is thrown.
public struct HostError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    /// The input was well formed but holds what lansync cannot keep (an integer past 64 bits):
    /// the local API answers it with 422 rather than 400.
    public var unprocessable = false

    public init(_ description: String) { self.description = description }

    /// What a network error (SwiftNIO's, TLS's) says, in one line.
    public static func describing(_ error: any Error) -> String { TransportError.describing(error) }
}
