/// Membership in a handful of elements: the versions, list tags or removals of one field state,
/// which are almost always none, one or two. A `Set` of them hashes every element to build and
/// again to ask; below ``threshold`` elements a linear search of the array is cheaper, and
/// merging field states (every field a batch brings) asks this for each of their elements.
/// Above it, a `Set`: the answer is the same either way, only the cost differs.
package struct SmallSet<Element: Hashable> {
    /// The size up to which the elements are searched in place.
    package static var threshold: Int { 8 }

    private let elements: [Element]
    private let hashed: Set<Element>?

    package init(_ elements: [Element]) {
        if elements.count > Self.threshold {
            self.elements = []
            hashed = Set(elements)
        } else {
            self.elements = elements
            hashed = nil
        }
    }

    package func contains(_ element: Element) -> Bool {
        if let hashed { return hashed.contains(element) }
        return elements.contains(element)
    }
}

extension Array where Element: Hashable {
    /// True if no element appears twice.
    package var hasNoRepeats: Bool {
        if count <= SmallSet<Element>.threshold {
            for i in indices.dropFirst() where self[..<i].contains(self[i]) { return false }
            return true
        }
        return Set(self).count == count
    }
}
