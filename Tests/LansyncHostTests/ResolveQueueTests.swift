import LansyncDiscovery
import Testing

/// How a node spreads and bounds its mDNS resolves (Docs/DISCOVERY.md, "Many machines"). An
/// advert here is "owner/interface": the owner is the node.
@Suite struct ResolveQueueTests {
    func queue(
        limit: Int = 2,
        capacity: Int = .max,
        pick: @escaping (Int) -> Int = { _ in 0 }
    )
        -> ResolveQueue<String, String>
    {
        ResolveQueue(
            limit: limit,
            capacity: capacity,
            attempts: 3,
            owner: { String($0.split(separator: "/")[0]) },
            pick: pick
        )
    }

    @Test func aFewResolveAtOnceInTheOrderTheyCame() {
        var q = queue(limit: 2)
        var started: [String] = []
        for advert in ["a/eth0", "b/eth0", "c/eth0"] { q.add(advert) }
        q.add("a/eth0")  // reported again: still once
        started = q.next()
        #expect(started == ["a/eth0", "b/eth0"])
        started = q.next()
        #expect(started.isEmpty)
        q.finished("a/eth0", .held)
        started = q.next()
        #expect(started == ["c/eth0"])
        #expect(q.runningCount == 2 && q.heldCount == 1 && q.waitingCount == 0)
    }

    @Test func placesAreCountedByNodeAndFreedWhenTheAdvertGoes() {
        var q = queue(limit: 4, capacity: 2)
        var started: [String] = []
        for advert in ["a/eth0", "b/eth0", "c/eth0", "a/wlan0"] { q.add(advert) }
        // a and b take the two places; a's second advert needs no place of its own.
        started = q.next()
        #expect(Set(started) == ["a/eth0", "b/eth0", "a/wlan0"])
        for advert in ["a/eth0", "b/eth0", "a/wlan0"] { q.finished(advert, .held) }
        started = q.next()
        #expect(started.isEmpty)
        #expect(q.ownerCount == 2 && q.waitingCount == 1)
        q.remove("b/eth0")
        started = q.next()
        #expect(started == ["c/eth0"])
    }

    @Test func anAdvertNotOfTheClusterTakesNoPlace() {
        var q = queue(limit: 1, capacity: 1)
        var started: [String] = []
        q.add("stranger/eth0")
        q.add("member/eth0")
        started = q.next()
        #expect(started == ["stranger/eth0"])
        q.finished("stranger/eth0", .ignored)
        started = q.next()
        #expect(started == ["member/eth0"])
        q.finished("member/eth0", .held)
        #expect(q.ownerCount == 1)
    }

    @Test func aFailedResolveIsTriedAgainAFewTimes() {
        var q = queue(limit: 1)
        var started: [String] = []
        q.add("a/eth0")
        for attempt in 1...3 {
            started = q.next()
            #expect(started == ["a/eth0"], "attempt \(attempt)")
            let requeued = q.finished("a/eth0", .failed)
            #expect(requeued == (attempt < 3))
        }
        started = q.next()
        #expect(started.isEmpty)
        #expect(q.ownerCount == 0)
        q.add("a/eth0")  // the browser reports it anew: three more tries
        started = q.next()
        #expect(started == ["a/eth0"])
    }

    @Test func pastItsCapacityANodePicksAtRandom() {
        // `pick` stands in for the random choice: always the last waiting advert.
        var q = queue(limit: 1, capacity: 2, pick: { $0 - 1 })
        var started: [String] = []
        for advert in ["a/eth0", "b/eth0", "c/eth0"] { q.add(advert) }
        started = q.next()
        #expect(started == ["c/eth0"])
        q.finished("c/eth0", .held)
        started = q.next()
        #expect(started == ["b/eth0"])
        q.finished("b/eth0", .held)
        started = q.next()
        #expect(started.isEmpty)
    }

    @Test func anAdvertLostWhileResolvingFreesItsPlace() {
        var q = queue(limit: 1, capacity: 1)
        var started: [String] = []
        q.add("a/eth0")
        q.add("b/eth0")
        started = q.next()
        #expect(started == ["a/eth0"])
        q.remove("a/eth0")
        let heeded = q.finished("a/eth0", .held)
        #expect(!heeded)  // ends unheeded
        started = q.next()
        #expect(started == ["b/eth0"])
        #expect(q.ownerCount == 1)
    }
}
