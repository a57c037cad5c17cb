#!/bin/bash
# Review blind sets for a blind test (bench/precision.md): each set's default pass and, for a targeted
# `nr*` set, the new-rule focused pass, into bench/precision/runs/<toml date>-<set>[-newrules].
#
#     REVIEW_SRC=/tmp/rev/src bench/precision/review.sh SET...
#
# REVIEW_SRC: the `src` folder of a worktree at the committed code under test (`git worktree add
# /tmp/rev <sha>`), so that editing the checkout while the review runs cannot leak into it; without
# it, the installed torchreview is used.
set -eu
cd "$(dirname "$0")/../.."
export PYTHONPATH=${REVIEW_SRC:-}
for set in "$@"; do
  toml=$(ls bench/precision/repos-"$set"-20??-??-??.toml)
  date=$(basename "$toml" .toml | grep -oE '20[0-9]{2}-[0-9]{2}-[0-9]{2}$')
  python bench/precision/sweep.py review "$toml" "bench/precision/runs/$date-$set" -- --ignore-track-record
  case $set in
    nr*) python bench/precision/sweep.py review "$toml" "bench/precision/runs/$date-$set-newrules" -- \
           --select TR209,TR218,TR219,TR517,TR518,TR519,TR520 --min-confidence medium --show-advice \
           --ignore-track-record ;;
  esac
  echo "$set done"
done
