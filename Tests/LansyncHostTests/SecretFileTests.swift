import Foundation
import LansyncHost
import LansyncTestSupport
import Testing

/// Secret files: made once, replaced whole (never truncated in place, where a reader or a crash
/// would find an empty key), readable by their owner only.
@Suite struct SecretFileTests {
    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test func aSecretIsMadeOnceAndReplacedWhole() throws {
        let dir = makeTemporaryDirectory("secret-file")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/cluster.pem"
        try SecretFile.write("first\n", to: path)
        #expect(try mode(path) == 0o600)
        #expect(throws: HostError.self) { try SecretFile.write("second\n", to: path) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "first\n")

        // The old file's inode is not written to: a reader holding it open still reads it whole.
        let reader = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? reader.close() }
        try SecretFile.write("second, longer than the first\n", to: path, replace: true)
        #expect(String(decoding: reader.readDataToEndOfFile(), as: UTF8.self) == "first\n")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "second, longer than the first\n")
        #expect(try mode(path) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["cluster.pem"], "no file left beside it")
    }

    @Test func aReplacementThatCannotBeWrittenLeavesTheOldFile() throws {
        let dir = makeTemporaryDirectory("secret-file-blocked")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/node.pem"
        try SecretFile.write("old\n", to: path)
        // The new file's place beside it is taken by a directory that cannot be removed.
        let blocker = path + ".new-\(getpid())"
        try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: blocker + "/x", contents: Data()))
        #expect(throws: HostError.self) { try SecretFile.write("new\n", to: path, replace: true) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old\n")
    }
}
