set -e
cd /tmp/fx && rm -rf /tmp/fx/* 
B=/work/main/.build/release/lansync
export LANSYNC_RUNTIME_DIR=/tmp/fx/rt; mkdir -p rt
$B cluster create c.pem >/dev/null
$B init --dir a --cluster c.pem --name alpha >/dev/null
$B init --dir b --cluster c.pem --name beta >/dev/null
$B add --dir a --id task-1 --type task title=Climb 'tags=["outdoor","rope"]' n=1 >/dev/null
$B set --dir a task-1 title="Climb again" n=2 tags+=indoor
$B set --dir a task-1 n=3 tags-=rope
$B add --dir a --id note-1 --type note text=hello >/dev/null
$B add --dir a --id gone --type note text=bye >/dev/null
$B rm --dir a gone
$B node --dir a --listen 127.0.0.1:7701 --no-mdns 2>/dev/null &
NODE=$!
sleep 1.5
$B sync --dir b --peer 127.0.0.1:7701
$B set --dir b task-1 title="Beta title"
$B set --dir a task-1 title="Alpha title"
$B add --dir b --id from-b unicode='"héllo ✓"' x=2.5 >/dev/null
sleep 1
$B sync --dir b --peer 127.0.0.1:7701
sleep 1
kill $NODE; wait
$B conflicts --dir b
$B history --dir b task-1
