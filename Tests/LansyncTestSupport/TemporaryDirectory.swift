import Foundation
import Synchronization

/// A fresh directory under the system's temporary directory, for one test. Every directory made
/// here is removed when the test process exits, whatever the tests did with it (a run used to
/// leave a few hundred behind in /tmp); set `LANSYNC_KEEP_TEST_DIRS=1` to keep them for a look
/// after a failure.
public func makeTemporaryDirectory(_ label: String) -> String {
    var template = Array("/tmp/lansync-test-\(label)-XXXXXX".utf8CString)
    let path = template.withUnsafeMutableBufferPointer { buffer in
        mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
    }
    TemporaryDirectories.made.withLock { made in
        if made.isEmpty, ProcessInfo.processInfo.environment["LANSYNC_KEEP_TEST_DIRS"] != "1" {
            atexit { TemporaryDirectories.removeAll() }
        }
        made.append(path!)
    }
    return path!
}

/// The directories ``makeTemporaryDirectory(_:)`` made in this process.
enum TemporaryDirectories {
    static let made = Mutex<[String]>([])

    static func removeAll() {
        for path in made.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}
