#!/bin/sh
# prune.sh DIR DAYS: delete files in DIR last changed more than DAYS days
# ago, printing each. A missing DIR is nothing to prune.
set -eu
dir=$1
days=$2
[ -d "$dir" ] || { echo "$dir: nothing to prune"; exit 0; }
find "$dir" -type f -mtime +"$days" -print -exec rm -f {} +
echo "pruned $dir (files older than $days days)"
