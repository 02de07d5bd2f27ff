#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cdc dupes --action reflink where the file system has it: XFS (reflink=1) in
# a loop-mounted image. Duplicates must end up sharing their extents, and
# every path keeps its bytes, its inode and its metadata (mtime included); a
# unique file and a copy owned by another user are left alone; a dry run
# probes the file system and changes nothing.
#   xfs_reflink_test.sh CDC_BINARY
# Needs root for the loop mount and the chown (CI runs as root): anywhere
# else it FAILS, loudly (a test that cannot run is not a test that passed).
# mkfs.xfs comes from xfsprogs (scripts/install-deps.sh).
set -euo pipefail
cdc="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
if [[ $(id -u) -ne 0 ]]; then fail "not root: this test loop-mounts an XFS image; run the tests as root (CI does)"; fi
command -v mkfs.xfs >/dev/null || fail "mkfs.xfs is missing (scripts/install-deps.sh installs xfsprogs)"

work="$(mktemp -d /tmp/cdc-reflink-XXXXXX)"
mnt="$work/mnt"
cleanup() {
  if mountpoint -q "$mnt" 2>/dev/null; then umount "$mnt"; fi
  rm -rf "$work"
}
trap cleanup EXIT
truncate -s 320M "$work/xfs.img"  # XFS wants at least 300 MB
mkfs.xfs -q -m reflink=1 "$work/xfs.img"
mkdir "$mnt"
mount -o loop "$work/xfs.img" "$mnt" || fail "cannot loop-mount the XFS image (no loop device?)"

head -c 3000000 /dev/urandom > "$mnt/a"
cp --reflink=never "$mnt/a" "$mnt/b"  # (coreutils 9 would reflink by itself)
mkdir "$mnt/d"
cp --reflink=never "$mnt/a" "$mnt/d/c"
head -c 3000000 /dev/urandom > "$mnt/u"  # same size, other bytes
cp --reflink=never "$mnt/a" "$mnt/other"  # same bytes, another owner: never merged
chown 4242:4242 "$mnt/other"
touch -d "2001-01-01" "$mnt/a"  # the oldest: kept
sync
want="$(sha256sum < "$mnt/a")"
# Path, inode, owner, mode, mtime: reflink changes none of them.
meta() { stat -c '%n %i %u %g %a %Y' "$mnt/a" "$mnt/b" "$mnt/d/c" "$mnt/u" "$mnt/other"; }
meta_before="$(meta)"
shared() { filefrag -v "$1" | grep -q shared; }
for f in a b d/c u other; do
  if shared "$mnt/$f"; then fail "$f shares extents before the run"; fi
done

# A dry run probes the file system (zero-length FIDEDUPERANGE) and plans.
"$cdc" dupes -q --action reflink --dry-run "$mnt" > "$work/dry" || fail "dry run exited $? ($(cat "$work/dry"))"
[[ $(grep -c "^would reflink '" "$work/dry") == 2 ]] || fail "expected 2 planned reflinks:
$(cat "$work/dry")"
for f in a b d/c; do if shared "$mnt/$f"; then fail "the dry run shared $f"; fi; done

"$cdc" dupes -q --action reflink "$mnt" > "$work/out" || fail "cdc dupes exited $? ($(cat "$work/out"))"
n=$(grep -c "^reflinked '" "$work/out" || true)
[[ "$n" == 2 ]] || fail "expected 2 files reflinked, output:
$(cat "$work/out")"
grep -q "^kept '$mnt/other': not merged: different owner (uid 4242, kept file 0)" "$work/out" ||
  fail "the other owner's copy is not reported as kept apart:
$(cat "$work/out")"
sync
for f in a b d/c; do
  [[ "$(sha256sum < "$mnt/$f")" == "$want" ]] || fail "$f changed content"
  shared "$mnt/$f" || fail "$f does not share its extents after reflink"
done
if shared "$mnt/u"; then fail "the unique file u shares extents"; fi
if shared "$mnt/other"; then fail "the other owner's copy shares extents"; fi
[[ "$(meta)" == "$meta_before" ]] || fail "an inode, owner, mode or mtime changed:
before: $meta_before
after:  $(meta)"
# A second run finds the same duplicates (still three names) and reflinks again without harm.
"$cdc" dupes -q --action reflink "$mnt" > "$work/out2" || fail "second run exited $?"
[[ "$(sha256sum < "$mnt/b")" == "$want" ]] || fail "b changed on the second run"
echo "ok: 2 files reflinked on XFS, extents shared, bytes, inodes, owners, modes and mtimes kept; another owner's copy left apart"
