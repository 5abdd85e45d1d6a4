# Makes the v19 fixtures with the release before v20 (field rows numbered by item): two replicas
# that synced, with a conflict, a deleted item, a removed field, a link, an indexed field and
# search texts; then what that release printed for them.
#   bash make.sh LANSYNC_BINARY
set -e
B=$(realpath "$1")
cd "$(dirname "$0")"
W=$(mktemp -d)
export LANSYNC_RUNTIME_DIR=$W/rt; mkdir -p "$W/rt"
$B cluster create $W/c.pem >/dev/null
$B init --dir $W/a --cluster $W/c.pem --name alpha >/dev/null
$B init --dir $W/b --cluster $W/c.pem --name beta >/dev/null
$B index --dir $W/a n >/dev/null
$B add --dir $W/a --id task-1 --type task title=Climb 'tags=["outdoor","rope"]' n=1 note=temporary >/dev/null
$B set --dir $W/a task-1 title="Climb again" n=2 tags+=indoor
$B set --dir $W/a task-1 n=3 tags-=rope
$B unset --dir $W/a task-1 note
$B add --dir $W/a --id note-1 --type note text=hello about=@task-1 >/dev/null
$B add --dir $W/a --id gone --type note text=bye >/dev/null
$B rm --dir $W/a gone
$B node --dir $W/a --listen 127.0.0.1:7791 --no-mdns 2>/dev/null &
NODE=$!
sleep 1.5
$B sync --dir $W/b --peer 127.0.0.1:7791
$B set --dir $W/b task-1 title="Beta title"
$B set --dir $W/a task-1 title="Alpha title"
$B add --dir $W/b --id from-b unicode='"héllo ✓"' x=2.5 >/dev/null
sleep 1
$B sync --dir $W/b --peer 127.0.0.1:7791
sleep 1
kill $NODE; wait
for r in a b; do
    mkdir -p $r
    $B list --dir $W/$r --deleted --json > $r/list.json
    $B conflicts --dir $W/$r --json > $r/conflicts.json
    for id in task-1 note-1 gone from-b; do $B history --dir $W/$r $id --all --json > $r/history.$id.json; done
    sqlite3 $W/$r/replica.sqlite "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
    cp $W/$r/replica.sqlite $r/replica.sqlite
done
rm -rf "$W"
