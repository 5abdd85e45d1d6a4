import Foundation
import LansyncStore

extension DataDirectory {
    /// The file that holds the local API's bearer token (mode 0600).
    public var apiTokenPath: String { path + "/api-token" }

    /// The local API's bearer token (Docs/API.md, "Auth"): 256 random bits as 64 hex digits,
    /// made at `init` and `join`; a directory made before the API gets one on first use. Whoever
    /// can read the data directory can use the API, and nobody else.
    public func apiToken() throws -> String {
        if let problem = FileAccess.readProblem(apiTokenPath) { throw HostError(problem) }
        if let text = try? String(contentsOfFile: apiTokenPath, encoding: .utf8) {
            let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard token.count == 64, token.allSatisfy(\.isHexDigit) else {
                throw HostError(
                    "\(apiTokenPath) does not hold an API token: remove it, and 'lansync api-token' makes a new one"
                )
            }
            return token
        }
        var generator = SystemRandomNumberGenerator()
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }
            .joined()
        do {
            try SecretFile.write(token + "\n", to: apiTokenPath)
        } catch {
            // Another process made it first: use theirs.
            if let text = try? String(contentsOfFile: apiTokenPath, encoding: .utf8) {
                return text.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            throw error
        }
        return token
    }
}
