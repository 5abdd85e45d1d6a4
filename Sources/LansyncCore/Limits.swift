/// The hard limits every replica enforces on what it writes and what it accepts.
///
/// They bound memory and frame sizes everywhere; the relay enforces them for the whole cluster.
public enum Limits {
    /// The largest encoded value of one field (1 MiB): large enough for a 1 MB text, small enough
    /// that one value always fits in one protocol frame.
    public static let maxValueBytes = 1 << 20
    /// The most user fields one item may have.
    public static let maxFieldsPerItem = 256
    /// The longest field name, in UTF-8 bytes.
    public static let maxFieldNameBytes = 128
    /// The longest item type, in UTF-8 bytes.
    public static let maxTypeBytes = 64
    /// The largest counter a dot or version vector may carry: SQLite stores integers as signed
    /// 64-bit, and a peer sending more is lying.
    public static let maxCounter = UInt64(Int64.max)
    /// The most removed list tags a field's removal log keeps per removing node. Removing more
    /// forgets the oldest (``FieldState/horizon``): a peer behind those then gets the whole list
    /// instead of a delta. 64 keeps the log under a few kilobytes of a busy list.
    public static let maxLoggedRemovals = 64
    /// The longest item id, in bytes.
    public static let maxItemIDBytes = 128
    /// How deep lists may nest in one value (`[[1]]` is 2): what every decoder of a replica's
    /// file and of the protocol accepts (``ByteReader/maxValueDepth``), so that a value written
    /// can always be read back.
    public static let maxValueNesting = 16
}
