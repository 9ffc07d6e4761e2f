#!/bin/sh
# prune.sh DIR DAYS: delete files in DIR last changed more than DAYS days
# ago, printing each. A missing DIR is nothing to prune. A worker's log
# files (worker-PID.log, its rotated copies, worker-PID.out) are kept while
# process PID runs: an idle worker's log, or its .out, which is written only
# if it crashes, may be old while the worker is not.
set -eu
dir=$1
days=$2
[ -d "$dir" ] || { echo "$dir: nothing to prune"; exit 0; }
find "$dir" -type f -mtime +"$days" | while IFS= read -r f; do
	case ${f##*/} in
	worker-[0-9]*)
		pid=${f##*/worker-}
		pid=${pid%%[!0-9]*}
		[ -d "/proc/$pid" ] && continue ;;
	esac
	echo "$f"
	rm -f "$f"
done
echo "pruned $dir (files older than $days days)"
