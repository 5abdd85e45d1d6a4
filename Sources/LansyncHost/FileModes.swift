import Foundation

extension DataDirectory {
    /// What lansync makes readable by others: nothing. Every record, this machine's key and the
    /// API token live in the data directory, so it is the owner's alone (0700) and so is every
    /// file in it (0600). The CLI sets its umask to 077, so what it creates is private from the
    /// start; this tightens what an earlier release, a copy or a hand-made directory left open.
    ///
    /// Returns a sentence for each thing it tightened (nothing when all was private). What the
    /// process may not change (another user's files) it leaves alone: that user's own commands
    /// tighten them.
    @discardableResult
    public func tightenPermissions() -> [String] {
        var changed: [String] = []
        func tighten(_ file: String, to mode: mode_t) {
            var info = stat()
            guard stat(file, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 != 0 else { return }
            let was = String(info.st_mode & 0o777, radix: 8)
            if chmod(file, mode) == 0 { changed.append("\(file) was mode \(was), now \(String(mode, radix: 8))") }
        }
        tighten(path, to: 0o700)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        for name in names.sorted() {
            var info = stat()
            let file = path + "/" + name
            // Regular files only: the control socket is made private by the umask, and a folder a
            // user keeps here is theirs.
            guard lstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            tighten(file, to: 0o600)
        }
        return changed
    }
}
