import CAvahi

/// libavahi-client's functions, loaded the first time discovery needs them.
///
/// lansync does not link libavahi-client: it brings twelve shared libraries (D-Bus, systemd,
/// gcrypt, lz4, zstd...) that every command would load and bind as it starts, and only the
/// commands that discover use it. A machine without the library runs every other command, and a
/// node there says that discovery is unavailable and why.
enum AvahiLibrary {
    // nonisolated(unsafe), and why it is safe: written once, by Swift's thread-safe lazy
    // initialisation of a static; the table it points to is written once, under pthread_once,
    // before the pointer is returned, and never again.
    nonisolated(unsafe) private static let loaded: (functions: UnsafePointer<LansyncAvahi>?, problem: String?) = {
        var problem: UnsafePointer<CChar>?
        let functions = lansync_avahi_load(&problem)
        return (functions, problem.map { String(cString: $0) })
    }()

    /// Why the library cannot be used (it is not installed, or lacks a function); nil if it can.
    static var problem: String? { loaded.problem }

    /// The functions. Read only once ``problem`` was found nil: ``AvahiDiscovery`` checks it
    /// before it makes its event loop, and every other call follows from that loop.
    static var functions: LansyncAvahi {
        guard let table = loaded.functions else { preconditionFailure("libavahi-client used without being loaded") }
        return table.pointee
    }
}

/// The loaded functions, as the call sites spell them: `avahi.client_new(...)`.
var avahi: LansyncAvahi { AvahiLibrary.functions }

extension AvahiLibrary {
    /// Avahi's words for an error code.
    static func describe(_ error: Int32) -> String {
        functions.strerror(error).map { String(cString: $0) } ?? "Avahi error \(error)"
    }
}
