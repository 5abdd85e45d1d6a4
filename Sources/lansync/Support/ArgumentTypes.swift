public import ArgumentParser
public import LansyncHost

/// Parses `HOST:PORT` arguments.
extension PeerAddress: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}

extension SettlePolicy: ExpressibleByArgument {}

extension MemberRole: ExpressibleByArgument {
    public init?(argument: String) { self.init(name: argument) }
    public static var allValueStrings: [String] { allCases.map { $0.description } }
}

/// An interval option in seconds: positive, finite, at most a day (it becomes whole milliseconds).
func validateInterval(_ seconds: Double, _ option: String) throws {
    guard seconds.isFinite, seconds > 0, seconds <= 86_400 else {
        throw ValidationError("\(option) must be a number of seconds above 0 and at most 86400")
    }
}
