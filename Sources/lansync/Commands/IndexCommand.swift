import ArgumentParser
import LansyncHost

/// `lansync index [FIELD...] [--drop]`
struct IndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract: "Index fields for queries ('list --where', the API's where), or list the indexed ones.",
        discussion: """
            A filter on an indexed field reads only the items it selects, through an index; on any \
            other field, every item's value is read (fine for thousands of items, slow for \
            hundreds of thousands). Indexing is explicit, per replica, and costs a little on every \
            write of the field. 'lansync list --where ... --explain' says which index a query uses.
            """
    )

    @OptionGroup var data: DataDirectoryOptions
    @Argument(help: "The fields to index (none: list the indexed fields).") var fields: [String] = []
    @Flag(help: "Stop indexing the fields instead.") var drop = false

    func run() throws {
        let replica = try LocalReplica(data.directory)
        let names = try fields.map { try QueryParser.sort($0).field }
        if names.isEmpty {
            let indexed = try replica.indexedFields()
            if indexed.isEmpty { print("no field is indexed ('lansync index FIELD' indexes one)") }
            for (field, items) in indexed { print("\(field.rawValue)  \(items) item(s)") }
            return
        }
        for name in names {
            if drop {
                print(
                    try replica.dropIndex(name)
                        ? "\(name.rawValue): no longer indexed" : "\(name.rawValue) was not indexed"
                )
            } else {
                try replica.addIndex(name)
                print("\(name.rawValue): indexed")
            }
        }
    }
}
