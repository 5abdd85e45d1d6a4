import Foundation
import LansyncCore
import LansyncJSON
import LansyncReplica
import LansyncStore
public import Logging

/// The node's log on stderr, one line per event (Docs/OPERATIONS.md, "Logs"). As text, for a
/// person: the time, the level and the sentence, `2026-11-25T07:30:01.118Z info session with
/// garage (k3v2x1q) started: direct, dialled 10.0.0.7:7420`. As JSON Lines (`--log-format json`),
/// for journald shippers and log stores: `{"time", "level", "message"}` plus every key the line
/// carries (`event`, `peer`, `path`, `sent`, `bytes`, ...), so that a session's figures need no
/// parsing of the sentence.
public struct LineLogHandler: LogHandler {
    public enum Format: String, Sendable, CaseIterable {
        case text, json
    }

    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let format: Format

    public init(level: Logger.Level, format: Format) {
        logLevel = level
        self.format = format
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let time = WallClock.iso8601(milliseconds: WallClock.milliseconds)
        let line: String
        switch format {
        case .text:
            // One line, whatever a peer put in its name or its error: control characters escaped.
            line = "\(time) \(event.level) \(TerminalText.escaped(event.message.description))"
        case .json:
            var all = metadata
            if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
            if let extra = event.metadata { all.merge(extra) { $1 } }
            var fields: [(key: String, value: JSON)] = [
                ("time", .string(time)), ("level", .string(event.level.rawValue)),
                ("message", .string(event.message.description)),
            ]
            for (key, value) in all.sorted(by: { $0.key < $1.key })
            where !["time", "level", "message"].contains(key) {
                fields.append((key, .string(value.description)))
            }
            line = JSON.object(fields).text
        }
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

}
