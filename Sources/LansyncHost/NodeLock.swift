import Foundation

/// Makes sure only one node (or repair) runs on a data directory: an exclusive `flock` on
/// `DIR/node.lock`, released by ``release()`` or when the process ends.
public struct NodeLock: Sendable {
    let fd: Int32

    public init(directory: DataDirectory) throws(HostError) {
        let path = directory.lockPath
        fd = Foundation.open(path, O_RDWR | O_CREAT, 0o600)
        guard fd >= 0 else { throw HostError("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw HostError("a node is already running on \(directory.path): stop it first, or use another --dir")
        }
    }

    public func release() {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
