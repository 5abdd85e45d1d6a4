/// A failure of the host layer (the data directory, its files, import input): one line that says
/// what was wrong and what to do. Nothing was changed when it is thrown.
public struct HostError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String

    public init(_ description: String) { self.description = description }
}
