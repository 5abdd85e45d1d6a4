/// The adverts waiting to be resolved, and the resolvers running: at most ``limit`` at once, the
/// adverts of at most ``capacity`` owners (nodes) resolved and held, picked at random among those
/// waiting, and a resolve that failed (timed out) tried again later, at most ``attempts`` times
/// in all. (An advert is one node's service as seen on one interface and family: a node on IPv4
/// and IPv6 on two interfaces is four adverts, one owner.)
///
/// Each resolve sends multicast queries every avahi-daemon on the link processes. A node that
/// resolved every advert it browsed at once sent a hundred at a hundred machines, and a hundred
/// nodes starting together kept a hundred daemons (in the lab, on two cores) too busy to answer
/// D-Bus for minutes; resolvers timed out and their adverts were never reported. Queued, the same
/// resolves are spread over time and each daemon answers the few that are asked. Capped, a node of
/// a large cluster resolves a random few dozen of its members (its passive view holds 30 and the
/// members pass the others on), not all of them: every node resolving every advert is N² resolves,
/// each processed by N daemons. At random, so that the nodes do not all pick the same ones.
///
/// Only adverts of the node's own cluster are held: a small cluster on a LAN beside a large one
/// still resolves until it finds its own.
///
/// Pure bookkeeping, no Avahi: ``AvahiDiscovery`` starts what ``next()`` returns and reports each
/// end with ``finished(_:_:)``.
public struct ResolveQueue<Service: Hashable, Owner: Hashable> {
    /// Resolvers running at once.
    public let limit: Int
    /// Owners whose adverts are held or being resolved, at most; the rest wait until one goes.
    public let capacity: Int
    /// Tries per advert before it waits for the browser to report it again.
    public let attempts: Int
    private let owner: (Service) -> Owner
    private let pick: (Int) -> Int
    private var waiting: [Service] = []
    private var queued: Set<Service> = []
    private var running: Set<Service> = []
    private var held: Set<Service> = []
    private var failures: [Service: Int] = [:]
    /// Adverts held or running, by owner: the owners that take a place.
    private var places: [Owner: Int] = [:]

    /// - Parameters:
    ///   - owner: whose advert a service is (the node's service name).
    ///   - pick: chooses an index below its argument (random by default; tests pass a seeded one).
    public init(
        limit: Int = 4,
        capacity: Int = .max,
        attempts: Int = 3,
        owner: @escaping (Service) -> Owner,
        pick: @escaping (Int) -> Int = { Int.random(in: 0..<$0) }
    ) {
        self.limit = max(1, limit)
        self.capacity = max(1, capacity)
        self.attempts = max(1, attempts)
        self.owner = owner
        self.pick = pick
    }

    /// Adverts resolved and held.
    public var heldCount: Int { held.count }
    /// Owners with an advert held or being resolved.
    public var ownerCount: Int { places.count }
    /// Resolvers running now.
    public var runningCount: Int { running.count }
    /// Adverts waiting for a resolver.
    public var waitingCount: Int { waiting.count }

    /// An advert the browser reported: queued once, however often it is reported.
    public mutating func add(_ service: Service) {
        guard !queued.contains(service), !running.contains(service), !held.contains(service) else { return }
        failures[service] = nil
        waiting.append(service)
        queued.insert(service)
    }

    /// An advert the browser no longer sees: not resolved if it has not begun, its place freed
    /// if it had one (a resolver still running for it ends unheeded).
    public mutating func remove(_ service: Service) {
        if held.remove(service) != nil || running.remove(service) != nil { release(service) }
        guard queued.remove(service) != nil else { return }
        waiting.removeAll { $0 == service }
        failures[service] = nil
    }

    /// The adverts to resolve now, each running until ``finished(_:_:)``: in the order they came
    /// while every waiting owner fits, else an owner that has a place already or, while there
    /// are places, one at random.
    public mutating func next() -> [Service] {
        var started: [Service] = []
        while running.count < limit, let index = nextIndex() {
            let service = waiting.remove(at: index)
            queued.remove(service)
            running.insert(service)
            places[owner(service), default: 0] += 1
            started.append(service)
        }
        return started
    }

    private func nextIndex() -> Int? {
        guard !waiting.isEmpty else { return nil }
        if let placed = waiting.firstIndex(where: { places[owner($0)] != nil }) { return placed }
        guard places.count < capacity else { return nil }
        return places.count + waiting.count <= capacity ? 0 : pick(waiting.count)
    }

    /// How a resolve ended.
    public enum Outcome: Sendable {
        /// Resolved, and one of the node's: it keeps its place until the browser loses it.
        case held
        /// Resolved, and not the node's to use (another cluster's, the node's own advert).
        case ignored
        /// Not resolved (timed out, or the daemon refused the resolver).
        case failed
    }

    /// A resolver ended. A failure is queued again (at the back) until it has failed
    /// ``attempts`` times; returns whether it was.
    @discardableResult
    public mutating func finished(_ service: Service, _ outcome: Outcome) -> Bool {
        guard running.remove(service) != nil else { return false }
        if outcome == .held {
            failures[service] = nil
            held.insert(service)
            return false
        }
        release(service)
        guard outcome == .failed else {
            failures[service] = nil
            return false
        }
        let count = (failures[service] ?? 0) + 1
        guard count < attempts else {
            failures[service] = nil
            return false
        }
        failures[service] = count
        waiting.append(service)
        queued.insert(service)
        return true
    }

    private mutating func release(_ service: Service) {
        let key = owner(service)
        guard let count = places[key] else { return }
        places[key] = count > 1 ? count - 1 : nil
    }

    /// Everything forgotten (the client that ran the resolvers is gone).
    public mutating func reset() {
        waiting.removeAll()
        queued.removeAll()
        running.removeAll()
        held.removeAll()
        failures.removeAll()
        places.removeAll()
    }
}
