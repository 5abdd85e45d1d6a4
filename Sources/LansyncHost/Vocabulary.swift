// The names a front end (the CLI, the local API) may use, all through this module: the merge
// core's values whole (ids, field names, values, edits, queries), and the records of the layers
// below that the host hands out as they are. Nothing else of those layers is in reach of a front
// end: scripts/check-imports.sh fails the build when one imports them (Docs/ARCHITECTURE.md,
// "The modules, and what each may import").

@_exported public import LansyncCore

@_exported public import struct LansyncIdentity.InviteCode
@_exported public import enum LansyncIdentity.MemberRole
@_exported public import enum LansyncNode.DiscoveryState
@_exported public import struct LansyncNode.NodeStatus
@_exported public import struct LansyncNode.PeerAddress
@_exported public import struct LansyncNode.RelayLimits
@_exported public import struct LansyncNode.SessionCounters
@_exported public import enum LansyncNode.SettlePolicy
@_exported public import struct LansyncPostgres.PostgresLocation
@_exported public import enum LansyncReplica.ChangeKind
@_exported public import struct LansyncReplica.CollectionSettings
@_exported public import struct LansyncReplica.HistoryEntry
@_exported public import enum LansyncReplica.PeerSource
@_exported public import enum LansyncReplica.StoreError
@_exported public import enum LansyncReplica.WallClock
@_exported public import struct LansyncReplica.WriterBounds
@_exported public import struct LansyncStore.BackupSummary
@_exported public import struct LansyncStore.ChangeEntry
@_exported public import struct LansyncStore.DamageReport
@_exported public import struct LansyncStore.QueryError
@_exported public import struct LansyncStore.RepairReport
@_exported public import struct LansyncStore.RestoreReport
@_exported public import struct Logging.Logger
