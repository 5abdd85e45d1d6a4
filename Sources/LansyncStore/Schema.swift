import GRDB
import LansyncReplica

/// The replica file's schema, created and upgraded by versioned migrations (GRDB's migrator
/// records applied ones in `grdb_migrations`). Docs/STORAGE.md describes every table.
enum Schema {
    /// `PRAGMA application_id` of every lansync replica ('LNSY'), so a foreign SQLite file is
    /// recognised and refused.
    static let applicationID: Int32 = 0x4C4E_5359

    /// The migration that numbers field rows by item (``FieldRows``).
    static let fieldRowsByItem = "v20-field-rows-by-item"

    /// The migrations, oldest first, each in a function of its own below.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1", migrate: v1)
        migrator.registerMigration("v2-peers", migrate: v2Peers)
        migrator.registerMigration("v3-rejections", migrate: v3Rejections)
        migrator.registerMigration("v4-writers", migrate: v4Writers)
        migrator.registerMigration("v5-streams", migrate: v5Streams)
        migrator.registerMigration("v6-history-of-the-superseded", migrate: v6HistoryOfTheSuperseded)
        migrator.registerMigration("v7-one-copy-of-each-value", migrate: v7OneCopyOfEachValue)
        migrator.registerMigration("v8-removal-logs", migrate: v8RemovalLogs)
        migrator.registerMigration("v9-superseded-at", migrate: v9SupersededAt)
        migrator.registerMigration("v10-invites", migrate: v10Invites)
        migrator.registerMigration("v11-cluster-statements", migrate: v11ClusterStatements)
        migrator.registerMigration("v12-change-feed", migrate: v12ChangeFeed)
        migrator.registerMigration("v13-query-index", migrate: v13QueryIndex)
        migrator.registerMigration("v14-collection", migrate: v14Collection)
        migrator.registerMigration("v15-rejoin", migrate: v15Rejoin)
        migrator.registerMigration("v16-purge", migrate: v16Purge)
        migrator.registerMigration("v17-unset", migrate: v17Unset)
        migrator.registerMigration("v18-search", migrate: v18Search)
        migrator.registerMigration("v19-search-seq", migrate: v19SearchSeq)
        migrator.registerMigration(fieldRowsByItem, migrate: v20FieldRowsByItem)
        migrator.registerMigration("v21-signed-reports", migrate: v21SignedReports)
        migrator.registerMigration("v22-signed-runs", migrate: v22SignedRuns)
        migrator.registerMigration("v23-member-certificates", migrate: v23MemberCertificates)
        return migrator
    }

    private static func v1(_ db: Database) throws {
        try db.execute(
            sql: """
                PRAGMA application_id = \(applicationID);

                -- Settings and this replica's identity: node_id, cluster_id, node_name,
                -- fingerprint (machine and path, to detect a copied directory), clock (the
                -- hybrid logical clock's latest value), history_limit; since v4 writer_id (the
                -- id local writes are issued under) and writer_retired ('1' once a peer showed
                -- it holds more of that writer than this replica).
                CREATE TABLE meta (
                    key   TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                ) WITHOUT ROWID;

                -- Every node this replica has heard of. 'counter' is the replica's version
                -- vector: how far this replica has received that node's writes.
                CREATE TABLE node (
                    id      INTEGER PRIMARY KEY,
                    node_id TEXT NOT NULL UNIQUE,
                    name    TEXT,
                    counter INTEGER NOT NULL DEFAULT 0
                );

                -- One row per item; type, deleted and conflicts are derived from its fields.
                CREATE TABLE item (
                    id        INTEGER PRIMARY KEY,
                    item_id   TEXT NOT NULL UNIQUE,
                    type      TEXT NOT NULL,
                    deleted   INTEGER NOT NULL DEFAULT 0,
                    conflicts INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX item_by_type ON item(type, item_id);

                -- One row per field of an item. 'state' is the whole replicated state (binary);
                -- 'value' is the shown value as JSON, kept in step with it.
                CREATE TABLE field (
                    id       INTEGER PRIMARY KEY,
                    item     INTEGER NOT NULL REFERENCES item(id),
                    name     TEXT NOT NULL,
                    value    TEXT NOT NULL,
                    conflict INTEGER NOT NULL DEFAULT 0,
                    state    BLOB NOT NULL,
                    UNIQUE (item, name)
                );
                CREATE INDEX field_conflicts ON field(conflict) WHERE conflict = 1;

                -- The version index: which field holds a live version with dot (node, counter).
                -- "Field states with a dot unseen by version vector V" is one range scan per node.
                CREATE TABLE version (
                    node    INTEGER NOT NULL REFERENCES node(id),
                    counter INTEGER NOT NULL,
                    field   INTEGER NOT NULL REFERENCES field(id),
                    PRIMARY KEY (node, counter, field)
                ) WITHOUT ROWID;

                -- Every version of every field this replica has seen, conflict losers included,
                -- up to history_limit per field. 'write' is JSON: {"set": VALUE} or
                -- {"list": {"replaced": BOOL, "added": [...], "removed": [...]}}.
                CREATE TABLE history (
                    seq       INTEGER PRIMARY KEY,
                    field     INTEGER NOT NULL REFERENCES field(id),
                    node      INTEGER NOT NULL REFERENCES node(id),
                    counter   INTEGER NOT NULL,
                    timestamp INTEGER NOT NULL,
                    write     TEXT NOT NULL,
                    UNIQUE (field, node, counter)
                );
                CREATE INDEX history_by_field ON history(field, seq);

                -- What users see, for reading the file with the sqlite3 shell.
                CREATE VIEW shown AS
                    SELECT item.item_id, item.type, item.deleted, field.name, field.value, field.conflict
                    FROM item JOIN field ON field.item = item.id
                    WHERE substr(field.name, 1, 1) <> '_';
                """
        )
    }

    private static func v2Peers(_ db: Database) throws {
        try db.execute(
            sql: """
                -- What this node last knew of each peer it synced with, for 'lansync status' when
                -- no node is running: address, how it was found, the last time both sides were up
                -- to date (Unix ms), the last error, and the peer's version vector (binary).
                CREATE TABLE peer (
                    node_id        TEXT PRIMARY KEY NOT NULL,
                    name           TEXT,
                    address        TEXT,
                    source         TEXT NOT NULL,
                    last_sync      INTEGER,
                    last_error     TEXT,
                    version_vector BLOB
                ) WITHOUT ROWID;
                """
        )
    }

    private static func v3Rejections(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Versions the relay refused (over its limits) and overruled: who wrote them, which
                -- field, and why. 'lansync status' shows the ones this node wrote.
                CREATE TABLE rejection (
                    node_id TEXT NOT NULL,
                    counter INTEGER NOT NULL,
                    item_id TEXT NOT NULL,
                    field   TEXT NOT NULL,
                    reason  TEXT NOT NULL,
                    PRIMARY KEY (node_id, counter, item_id, field)
                ) WITHOUT ROWID;
                """
        )
    }

    private static func v4Writers(_ db: Database) throws {
        try db.execute(
            sql: """
                -- This replica's write identities in the order they started (Docs/MERGE.md, "Rolled-back
                -- replicas"). Dots are issued under meta 'writer_id'; a new writer starts whenever
                -- the replica cannot prove it continues the history its writer last wrote in.
                -- 'reason': init, unproven (no marker of this boot), restored (the replica holds
                -- less than its marker), witness (a peer held more of it), repair.
                CREATE TABLE writer (
                    seq       INTEGER PRIMARY KEY,
                    writer_id TEXT NOT NULL UNIQUE,
                    started   INTEGER NOT NULL,
                    reason    TEXT NOT NULL
                );

                INSERT INTO meta(key, value) SELECT 'writer_id', value FROM meta WHERE key = 'node_id';
                INSERT INTO writer(writer_id, started, reason) SELECT value, 0, 'init' FROM meta WHERE key = 'node_id';
                """
        )
    }

    private static func v5Streams(_ db: Database) throws {
        try db.execute(
            sql: """
                -- The stream each peer has under way to this replica (Docs/MERGE.md, "Rolled-back
                -- replicas"): what its batches covered so far (a binary version vector), and the
                -- peer's writer id when it sent them. node.counter takes it in only when the stream
                -- completes; the hello tells the peer, so an interrupted stream resumes.
                CREATE TABLE stream (
                    peer_id     TEXT PRIMARY KEY NOT NULL,
                    incarnation TEXT NOT NULL,
                    covers      BLOB NOT NULL
                ) WITHOUT ROWID;

                -- meta 'changes': counts the transactions that changed a field, so a cache of what
                -- the replica shows knows when it is stale (a stream's batches change fields
                -- before the version vector moves).
                INSERT OR IGNORE INTO meta(key, value) VALUES ('changes', '0');
                """
        )
    }

    private static func v6HistoryOfTheSuperseded(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Since v6 'history' keeps only what the field states no longer show: superseded
                -- versions, and the siblings of a field in conflict (in arrival order, for the
                -- relay's first-seen policy). A live version of a field without conflict lives in
                -- its state alone, so a value is no longer stored twice.
                DELETE FROM history
                WHERE field IN (SELECT id FROM field WHERE conflict = 0)
                  AND EXISTS (SELECT 1 FROM version v
                              WHERE v.node = history.node AND v.counter = history.counter AND v.field = history.field);
                """
        )
    }

    private static func v7OneCopyOfEachValue(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Since v7 a field's shown value lives only in its state: the 'value' column, a JSON
                -- copy of it, is gone, and with it the 'shown' view that read it ('lansync list',
                -- 'get' and 'export' show the values).
                DROP VIEW shown;
                ALTER TABLE field DROP COLUMN value;
                """
        )
    }

    private static func v8RemovalLogs(_: Database) throws {
        // No table changes: field states are written in format 4 from now on (their removal
        // log, for field deltas; Docs/STORAGE.md), which lansync before this release cannot
        // read. Recording this migration makes such a lansync refuse the file as written by a
        // newer version, instead of reporting every rewritten field as damaged.
    }

    private static func v9SupersededAt(_ db: Database) throws {
        try db.execute(
            sql: """
                -- 'superseded_at': the change stamp (meta 'changes') of the last transaction that
                -- took one of the field's versions out of the version index (a newer write
                -- replaced it). A stream to a peer reads the index a batch at a time; a field
                -- whose version left the index before the stream reached it is found here
                -- instead (Docs/STORAGE.md, "Streams and the version index"). 0: never.
                ALTER TABLE field ADD COLUMN superseded_at INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX field_by_superseded ON field(superseded_at, id) WHERE superseded_at > 0;
                """
        )
    }

    private static func v10Invites(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Invites this machine issued (lansync invite), local and never synced: the
                -- one-time secret, the name asked for, when it expires and when it was used
                -- (Unix ms), and the node it admitted. Docs/SECURITY.md.
                CREATE TABLE invite (
                    secret BLOB PRIMARY KEY,
                    name TEXT,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    used_at INTEGER,
                    used_by BLOB
                ) WITHOUT ROWID;
                """
        )
    }

    private static func v11ClusterStatements(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Statements of the cluster's authority this replica holds (lansync revoke,
                -- lansync cluster admitters, and every hello): revocations and sets of
                -- admitting machines, signed, in binary form. 'key' is what makes one new: a
                -- revocation's kind and node (a node's first revocation stays), a set's kind
                -- and signature. Only valid ones are kept (the node checks the signature
                -- first). Docs/SECURITY.md.
                CREATE TABLE statement (
                    key BLOB PRIMARY KEY,
                    record BLOB NOT NULL
                ) WITHOUT ROWID;
                """
        )
    }

    private static func v12ChangeFeed(_ db: Database) throws {
        try db.execute(
            sql: """
                -- The change feed (Docs/API.md): each field carries the sequence number of its
                -- latest change ('seq', 0: none since this version), when it was committed
                -- ('changed_at', Unix ms) and what it was ('change_kind', a ChangeKind). A
                -- change takes the highest number plus one, and numbers only grow, so none
                -- comes twice; meta 'change_floor' moves them past the numbers an older copy
                -- of the file gave (a restore, a repair).
                ALTER TABLE field ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE field ADD COLUMN changed_at INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE field ADD COLUMN change_kind INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX field_by_seq ON field(seq);
                """
        )
    }

    private static func v13QueryIndex(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Fields indexed for queries ('lansync index FIELD'), and their typed shown
                -- values: kind 0 null, 1 bool (num 0 or 1), 2 number (num), 3 string (txt),
                -- 4 list, whose elements get rows of their own (element 1). Kept in step with
                -- the field states by the code that saves them (Docs/API.md, "Queries").
                CREATE TABLE indexed_field (name TEXT PRIMARY KEY) WITHOUT ROWID;
                CREATE TABLE query_index (
                    field   TEXT NOT NULL,
                    item    INTEGER NOT NULL REFERENCES item(id),
                    kind    INTEGER NOT NULL,
                    element INTEGER NOT NULL,
                    num     REAL,
                    txt     TEXT
                );
                CREATE INDEX query_by_num ON query_index(field, element, kind, num);
                CREATE INDEX query_by_txt ON query_index(field, element, kind, txt);
                CREATE INDEX query_by_item ON query_index(item, field);
                """
        )
    }

    private static func v14Collection(_ db: Database) throws {
        try db.execute(
            sql: """
                -- What this replica knows of how far each member has seen (Docs/MERGE.md, "Causal
                -- stability and collection"): its version vector ('seen', binary) as of its last
                -- session anywhere in the cluster ('seen_at', Unix ms), learned in hellos, directly
                -- or gossiped; 'forgotten_at' once 'lansync members forget' said it is gone for
                -- good (a later session of its own brings it back).
                CREATE TABLE member (
                    node_id      TEXT PRIMARY KEY NOT NULL,
                    seen         BLOB NOT NULL,
                    seen_at      INTEGER NOT NULL,
                    forgotten_at INTEGER
                ) WITHOUT ROWID;

                -- 'collected': the item is deleted and reduced to its minimal tombstone (its
                -- '_deleted' field alone). meta 'stability' holds the ledger (binary, base64), meta
                -- 'feed_floor' the highest change-feed number a collection removed, meta
                -- 'trash_window' and 'away_after' the settings (ms) when not the defaults.
                ALTER TABLE item ADD COLUMN collected INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX item_deleted ON item(deleted, collected, id) WHERE deleted = 1 AND collected = 0;
                """
        )
    }

    private static func v15Rejoin(_ db: Database) throws {
        try db.execute(
            sql: """
                -- What a member that was away kept aside when it rejoined from a snapshot
                -- (Docs/MERGE.md, "Coming back after being away"): the field states holding
                -- writes of its own that the peer lacked (binary, as on the wire), re-issued under
                -- a new writer once the snapshot is in. meta 'rejoined_at' (Unix ms) says when.
                CREATE TABLE rejoin_pending (
                    item_id TEXT NOT NULL,
                    name    TEXT NOT NULL,
                    state   BLOB NOT NULL,
                    PRIMARY KEY (item_id, name)
                ) WITHOUT ROWID;
                """
        )
    }

    private static func v16Purge(_ db: Database) throws {
        // Items collected before this version count as collected now: the purge waits a whole
        // away window from here, as it would have from their collection.
        try db.execute(
            sql: """
                -- 'collected' holds when the item was reduced to its minimal tombstone (Unix ms; 0
                -- while it is not): the tombstone itself is purged an away window later. meta
                -- 'purged_items' counts the items purged.
                UPDATE item SET collected = ? WHERE collected <> 0;
                CREATE INDEX item_collected ON item(collected, id) WHERE collected <> 0;

                -- 'created': the item's '_type' was written only by this replica's writers, out of
                -- the peer's sight (it was created while away): re-issued even where the snapshot
                -- does not hold the item (which otherwise means it was collected meanwhile).
                ALTER TABLE rejoin_pending ADD COLUMN created INTEGER NOT NULL DEFAULT 0;
                """,
            arguments: [Int64(clamping: WallClock.milliseconds)]
        )
    }

    /// Field states may now hold removals (the write tag `unset`) and links (the value tag 7),
    /// which an older lansync cannot read: recording the version makes such a binary refuse the
    /// file as written by a newer version instead of calling its states damaged. And the links'
    /// index: none exist before this version, so it starts empty.
    private static func v17Unset(_ db: Database) throws {
        try db.execute(
            sql: """
                -- One row per link a live item's shown field value holds (a list may hold several):
                -- what finds the items that point at one ('list --links-to', 'rm' says how many)
                -- and the links whose target is gone ('check --links') without reading every state.
                CREATE TABLE item_link (
                    item   INTEGER NOT NULL REFERENCES item(id),
                    field  TEXT NOT NULL,
                    target TEXT NOT NULL
                );
                CREATE INDEX item_link_target ON item_link(target);
                CREATE INDEX item_link_item ON item_link(item, field);
                """
        )
    }

    /// Every item's text for searches (``ItemSearch``), made here for the items the file holds.
    private static func v18Search(_ db: Database) throws {
        try db.execute(
            sql: """
                -- One row per item (rowid = item.id): its id, type, field names and shown values,
                -- one per line, case folded. Trigrams without positions (detail=none) find the
                -- items that may hold a word; GLOB on the text decides.
                CREATE VIRTUAL TABLE item_search USING fts5(
                    text, tokenize = 'trigram case_sensitive 1', detail = 'none'
                );
                """
        )
        let nodes = NodeRows()
        for item in try Int64.fetchAll(db, sql: "SELECT id FROM item") {
            try Transaction.refreshSearchText(item: item, db: db, nodes: nodes, beforeV20: true)
        }
    }

    /// The search texts leave the write path: meta 'search_seq', the change-feed number up to
    /// which they reflect the fields, starts where the feed is (v18 wrote every text).
    private static func v19SearchSeq(_ db: Database) throws {
        try Transaction.setMeta("search_seq", String(try Transaction.latestSeq(db: db)), db: db)
    }

    /// Field rows are numbered by item (``FieldRows``): the `(item, name)` index and the stored
    /// `item` column go, and every reference to a field row (the version index, history) is
    /// renumbered. The table is rewritten once, in this migration's transaction; the space the
    /// old one held is given back when the file is next opened for writing (``ReplicaStore``
    /// vacuums a file whose free pages pass a quarter of it after an upgrade).
    private static func v20FieldRowsByItem(_ db: Database) throws {
        let most = try Int64.fetchOne(db, sql: "SELECT max(n) FROM (SELECT count(*) AS n FROM field GROUP BY item)")
        if let most, most > FieldRows.perItem {
            throw StoreError.io(
                "an item of this replica has \(most) field rows, more than the \(FieldRows.perItem) this version of lansync stores per item"
            )
        }
        try db.execute(
            sql: """
                CREATE TEMP TABLE field_renumbered (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
                INSERT INTO field_renumbered(old, new)
                    SELECT id, (item << \(FieldRows.shift)) + row_number() OVER (PARTITION BY item ORDER BY id) - 1
                    FROM field;

                -- One row per field of an item; its row id is the item's row id times 4096 plus the
                -- field's place among the item's fields, so an item's fields are one range of the
                -- key ('item' is computed from it). 'state' is the whole replicated state (binary).
                CREATE TABLE field_v20 (
                    id            INTEGER PRIMARY KEY,
                    item          INTEGER GENERATED ALWAYS AS (id >> \(FieldRows.shift)) VIRTUAL,
                    name          TEXT NOT NULL,
                    conflict INTEGER NOT NULL DEFAULT 0,
                    state         BLOB NOT NULL,
                    superseded_at INTEGER NOT NULL DEFAULT 0,
                    seq           INTEGER NOT NULL DEFAULT 0,
                    changed_at    INTEGER NOT NULL DEFAULT 0,
                    change_kind   INTEGER NOT NULL DEFAULT 0
                );
                INSERT INTO field_v20(id, name, conflict, state, superseded_at, seq, changed_at, change_kind)
                    SELECT r.new, f.name, f.conflict, f.state, f.superseded_at, f.seq, f.changed_at, f.change_kind
                    FROM field f JOIN field_renumbered r ON r.old = f.id ORDER BY r.new;

                CREATE TABLE version_v20 (
                    node    INTEGER NOT NULL REFERENCES node(id),
                    counter INTEGER NOT NULL,
                    field   INTEGER NOT NULL REFERENCES field(id),
                    PRIMARY KEY (node, counter, field)
                ) WITHOUT ROWID;
                INSERT INTO version_v20(node, counter, field)
                    SELECT v.node, v.counter, r.new FROM version v JOIN field_renumbered r ON r.old = v.field
                    ORDER BY v.node, v.counter, r.new;
                DROP TABLE version;
                ALTER TABLE version_v20 RENAME TO version;

                -- In two steps, so that no row takes a number another row still has (a row
                -- whose field is gone, which no version of lansync leaves, would have none).
                DELETE FROM history WHERE field NOT IN (SELECT old FROM field_renumbered);
                UPDATE history SET field = -(SELECT new FROM field_renumbered WHERE old = history.field);
                UPDATE history SET field = -field;

                DROP TABLE field;
                ALTER TABLE field_v20 RENAME TO field;
                CREATE INDEX field_conflicts ON field(conflict) WHERE conflict = 1;
                CREATE INDEX field_by_superseded ON field(superseded_at, id) WHERE superseded_at > 0;
                CREATE INDEX field_by_seq ON field(seq);
                DROP TABLE field_renumbered;
                """
        )
    }

    private static func v21SignedReports(_ db: Database) throws {
        try db.execute(
            sql: """
                -- The latest report each member signed of its own progress (protocol 1.13, the
                -- wire form of a signed report) and the member's time in it: what this replica
                -- passes on, since a replica believes a report passed on only with its member's
                -- signature (Docs/SECURITY.md). Null until one is held.
                ALTER TABLE member ADD COLUMN signed BLOB;
                ALTER TABLE member ADD COLUMN signed_at INTEGER;
                """
        )
    }

    private static func v22SignedRuns(_ db: Database) throws {
        try db.execute(
            sql: """
                -- The signed runs of writes this replica holds (Docs/SECURITY.md, "Signed
                -- writes"): a writer's dots first..last, how many field versions they wrote
                -- (leaves), and its member's public key and signature over their digests.
                CREATE TABLE signed_run (
                    node      INTEGER NOT NULL REFERENCES node(id),
                    first     INTEGER NOT NULL,
                    last      INTEGER NOT NULL,
                    leaves    INTEGER NOT NULL,
                    key       BLOB NOT NULL,
                    signature BLOB NOT NULL,
                    PRIMARY KEY (node, first)
                ) WITHOUT ROWID;

                -- The leaves of held runs whose versions this replica does not hold live
                -- (superseded, or gone before they came): the digest of what dot (node, counter)
                -- wrote to field 'field', so the run's proof can still be made whole.
                CREATE TABLE run_leaf (
                    node    INTEGER NOT NULL REFERENCES node(id),
                    counter INTEGER NOT NULL,
                    field   TEXT NOT NULL,
                    digest  BLOB NOT NULL,
                    PRIMARY KEY (node, counter, field)
                ) WITHOUT ROWID;
                """
        )
    }

    private static func v23MemberCertificates(_ db: Database) throws {
        try db.execute(
            sql: """
                -- The certificates of the member keys of held runs (the cluster authority's,
                -- checked when they came): passed on with the runs, so a machine that never met
                -- a run's member knows its key is a member's (Docs/SECURITY.md, "Signed writes").
                CREATE TABLE member_certificate (
                    key BLOB PRIMARY KEY,
                    der BLOB NOT NULL
                ) WITHOUT ROWID;
                """
        )
    }
}
