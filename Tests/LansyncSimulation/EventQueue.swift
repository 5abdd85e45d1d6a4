/// Events ordered by the simulated time they are due, then by the order they were scheduled:
/// the simulation's only clock, so a run is a pure function of its seed.
struct EventQueue<Event> {
    private struct Entry {
        let at: Duration
        let order: UInt64
        let event: Event

        func precedes(_ other: Entry) -> Bool { (at, order) < (other.at, other.order) }
    }

    private var heap: [Entry] = []
    private var scheduled: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    /// When the next event is due.
    var firstTime: Duration? { heap.first?.at }

    mutating func push(_ event: Event, at: Duration) {
        scheduled += 1
        heap.append(Entry(at: at, order: scheduled, event: event))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (at: Duration, event: Event)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let first = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].precedes(heap[smallest]) { smallest = left }
            if right < heap.count, heap[right].precedes(heap[smallest]) { smallest = right }
            guard smallest != parent else { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return (first.at, first.event)
    }
}
