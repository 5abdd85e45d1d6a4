import BenchSQLite
import Foundation

/// The records every workload uses: `items` items of type "bench" with ten fields f0…f9, each
/// value 49 bytes, so a field (name plus value) is 51 bytes and an item 510.
/// The same records feed lansync (JSON Lines for `lansync import`) and Syncthing (one JSON file
/// per item), so both carry the same payload.
struct Dataset {
    let items: Int
    static let fieldsPerItem = 10

    static func id(_ i: Int) -> String { "item-" + String(format: "%07d", i) }

    static func fields(_ i: Int) -> [(String, String)] {
        (0..<fieldsPerItem).map { k in
            (
                "f\(k)",
                "value \(k) of item \(String(format: "%07d", i)) " + String(repeating: "x", count: 26 - String(k).count)
            )
        }
    }

    /// Bytes of field names and values: what a user stored.
    var payloadBytes: Int {
        (0..<items).reduce(0) { sum, i in sum + Self.fields(i).reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count } }
    }

    var fieldCount: Int { items * Self.fieldsPerItem }

    /// Writes the items as `lansync import` input.
    func writeJSONLines(to path: String) throws {
        var out = ""
        out.reserveCapacity(items * 420)
        for i in 0..<items {
            out += "{\"id\":\"\(Self.id(i))\",\"type\":\"bench\",\"fields\":{"
            out += Self.fields(i).map { "\"\($0.0)\":\"\($0.1)\"" }.joined(separator: ",")
            out += "}}\n"
        }
        try out.write(toFile: path, atomically: false, encoding: .utf8)
    }

    /// Writes each item as `directory/ID.json`, the form a user of a file synchroniser would keep.
    func writeFiles(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for i in 0..<items {
            let json = "{" + Self.fields(i).map { "\"\($0.0)\":\"\($0.1)\"" }.joined(separator: ",") + "}"
            try json.write(toFile: "\(directory)/\(Self.id(i)).json", atomically: false, encoding: .utf8)
        }
    }

    /// `lansync import` input that sets `field` on `count` items spread evenly over the dataset,
    /// to values unique to `tag`: `count` local edits of distinct fields.
    func writeEdits(count: Int, field: String, tag: String, to path: String) throws {
        var out = ""
        for e in 0..<count {
            let i = e * items / count
            out +=
                "{\"id\":\"\(Self.id(i))\",\"fields\":{\"\(field)\":\"\(tag) edit \(e) of item \(String(format: "%07d", i))\"}}\n"
        }
        try out.write(toFile: path, atomically: false, encoding: .utf8)
    }
}
