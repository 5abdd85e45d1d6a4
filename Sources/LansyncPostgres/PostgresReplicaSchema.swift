import PostgresNIO

/// The tables of a replica kept in PostgreSQL, in a schema of their own (one per replica, so
/// several clusters share a database): the SQLite store's tables (Docs/STORAGE.md) in
/// PostgreSQL's types, with names and ids compared byte by byte (`COLLATE "C"`, as SQLite does).
///
/// Field states are stored in the core's own encoding (``LansyncCore/FieldState/encoded``,
/// every node id in full), so a state reads back without a table of node rows.
enum PostgresReplicaSchema {
    /// The version of these tables; a replica made by a newer lansync is refused.
    static let version = 1

    /// What a replica made before a column was added gains at open, in order: each statement
    /// adds what is missing and leaves a replica that has it as it is, and an older lansync
    /// reads the tables as before (it names the columns it reads), so the version stays.
    static let additions: [PostgresQuery] = [
        "ALTER TABLE member ADD COLUMN IF NOT EXISTS signed bytea",
        "ALTER TABLE member ADD COLUMN IF NOT EXISTS signed_at bigint",
        signedRuns,
        runLeaves,
        memberCertificates,
    ]

    /// Statements that make the tables, in order, inside the replica's schema.
    static let tables: [PostgresQuery] = [
        // Identity and settings: node_id, cluster_id, node_name, fingerprint, history_limit,
        // writer_id (the id local writes are issued under), clock (the hybrid logical clock's
        // latest value), changes (how many transactions changed a field: the change stamp),
        // stability (the stability ledger, base64 of the SQLite store's bytes), feed_floor,
        // purged_items, schema_version.
        """
        CREATE TABLE meta (
            key   text PRIMARY KEY,
            value text NOT NULL
        )
        """,
        // Every node heard of; 'counter' is the version vector.
        """
        CREATE TABLE node (
            id      bigserial PRIMARY KEY,
            node_id text NOT NULL UNIQUE,
            name    text,
            counter bigint NOT NULL DEFAULT 0
        )
        """,
        // The ids this replica has written as, oldest first.
        """
        CREATE TABLE writer (
            seq       bigserial PRIMARY KEY,
            writer_id text NOT NULL UNIQUE,
            started   bigint NOT NULL,
            reason    text NOT NULL
        )
        """,
        // Items and their derived columns (type, deleted, how many fields are in conflict);
        // 'collected': when the item was reduced to its minimal tombstone (Unix ms, 0 if not).
        """
        CREATE TABLE item (
            id        bigserial PRIMARY KEY,
            item_id   text COLLATE "C" NOT NULL UNIQUE,
            type      text NOT NULL,
            deleted   boolean NOT NULL DEFAULT false,
            conflicts integer NOT NULL DEFAULT 0,
            collected bigint NOT NULL DEFAULT 0
        )
        """,
        "CREATE INDEX item_by_type ON item (type, item_id)",
        "CREATE INDEX item_collectable ON item (id) WHERE deleted AND collected = 0",
        "CREATE INDEX item_collected ON item (collected, id) WHERE collected <> 0",
        // One row per field of an item: its whole replicated state, whether it is in conflict,
        // and its place in the change feed (seq, changed_at, change_kind); superseded_at is the
        // change stamp of the transaction that last removed one of its versions from the index.
        """
        CREATE TABLE field (
            id            bigserial PRIMARY KEY,
            item          bigint NOT NULL REFERENCES item (id),
            name          text COLLATE "C" NOT NULL,
            conflict      boolean NOT NULL DEFAULT false,
            state         bytea NOT NULL,
            superseded_at bigint NOT NULL DEFAULT 0,
            seq           bigint NOT NULL DEFAULT 0,
            changed_at    bigint NOT NULL DEFAULT 0,
            change_kind   smallint NOT NULL DEFAULT 0,
            UNIQUE (item, name)
        )
        """,
        "CREATE INDEX field_conflicts ON field (item) WHERE conflict",
        "CREATE INDEX field_by_seq ON field (seq)",
        "CREATE INDEX field_by_superseded ON field (superseded_at, id) WHERE superseded_at > 0",
        // The version index: which field holds each live version ("field states holding a
        // version unseen by V" is a range scan per node).
        """
        CREATE TABLE version (
            node    bigint NOT NULL REFERENCES node (id),
            counter bigint NOT NULL,
            field   bigint NOT NULL REFERENCES field (id),
            PRIMARY KEY (node, counter, field)
        )
        """,
        // The foreign key's own index: deleting a field row (collection, purge) checks it.
        "CREATE INDEX version_by_field ON version (field)",
        // Versions a field no longer shows, and siblings in the order they arrived.
        """
        CREATE TABLE history (
            seq       bigserial PRIMARY KEY,
            field     bigint NOT NULL REFERENCES field (id),
            node      bigint NOT NULL REFERENCES node (id),
            counter   bigint NOT NULL,
            timestamp bigint NOT NULL,
            write     text NOT NULL,
            UNIQUE (field, node, counter)
        )
        """,
        "CREATE INDEX history_by_field ON history (field, seq)",
        // The stream each peer has under way to this replica: what its batches covered so far
        // (a version vector in the core's encoding) and the peer's writer when it sent them;
        // node.counter takes it in only when the stream completes.
        """
        CREATE TABLE stream (
            peer_id     text PRIMARY KEY,
            incarnation text NOT NULL,
            covers      bytea NOT NULL
        )
        """,
        // What this replica last knew of each peer it synced with (the version vector in the
        // core's encoding).
        """
        CREATE TABLE peer (
            node_id        text COLLATE "C" PRIMARY KEY,
            name           text,
            address        text,
            source         text NOT NULL,
            last_sync      bigint,
            last_error     text,
            version_vector bytea
        )
        """,
        // The cluster's signed statements held (revocations, sets of admitters), by what makes
        // one new.
        """
        CREATE TABLE statement (
            key    bytea PRIMARY KEY,
            record bytea NOT NULL
        )
        """,
        // What the replica knows of each member's progress: its version vector (the core's
        // encoding) as of its last session anywhere in the cluster, when that was, and when it
        // was forgotten (null if it is not); the latest report the member signed of itself and
        // its time in it (protocol 1.13), to pass on.
        """
        CREATE TABLE member (
            node_id      text COLLATE "C" PRIMARY KEY,
            seen         bytea NOT NULL,
            seen_at      bigint NOT NULL,
            forgotten_at bigint,
            signed       bytea,
            signed_at    bigint
        )
        """,
        // What a rejoin kept aside to re-issue once the snapshot is in: field states holding
        // writes of the replica's own that the peer lacked; 'created' when the replica created
        // the item out of the peer's sight.
        """
        CREATE TABLE rejoin_pending (
            item_id text COLLATE "C" NOT NULL,
            name    text COLLATE "C" NOT NULL,
            state   bytea NOT NULL,
            created boolean NOT NULL DEFAULT false,
            PRIMARY KEY (item_id, name)
        )
        """,
        // The invitations this replica's node issued: the secret a joining machine proves it
        // holds, and when it was used and by whom (once only).
        """
        CREATE TABLE invite (
            secret     bytea PRIMARY KEY,
            name       text,
            created_at bigint NOT NULL,
            expires_at bigint NOT NULL,
            used_at    bigint,
            used_by    bytea
        )
        """,
        // Writes an overrule refused.
        """
        CREATE TABLE rejection (
            node_id text NOT NULL,
            counter bigint NOT NULL,
            item_id text NOT NULL,
            field   text NOT NULL,
            reason  text NOT NULL,
            PRIMARY KEY (node_id, counter, item_id, field)
        )
        """,
        signedRuns,
        runLeaves,
        memberCertificates,
    ]

    /// The signed runs of writes the replica holds (Docs/SECURITY.md, "Signed writes"): a
    /// writer's dots first..last, its member's key and signature.
    static let signedRuns: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS signed_run (
            node_id   text COLLATE "C" NOT NULL,
            first     bigint NOT NULL,
            last      bigint NOT NULL,
            leaves    integer NOT NULL,
            key       bytea NOT NULL,
            signature bytea NOT NULL,
            PRIMARY KEY (node_id, first)
        )
        """

    /// The certificates of the member keys of held runs (the authority's, checked when they
    /// came), passed on with the runs (Docs/SECURITY.md, "Signed writes").
    static let memberCertificates: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS member_certificate (
            key bytea PRIMARY KEY,
            der bytea NOT NULL
        )
        """

    /// The leaves of held runs whose versions the replica does not hold live (superseded, or
    /// gone before they came), so a run's proof can still be made whole.
    static let runLeaves: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS run_leaf (
            node_id text COLLATE "C" NOT NULL,
            counter bigint NOT NULL,
            field   text COLLATE "C" NOT NULL,
            digest  bytea NOT NULL,
            PRIMARY KEY (node_id, counter, field)
        )
        """
}
