#!/usr/bin/env bash
# cdc dupes --action reflink where the file system has it: XFS (reflink=1) in
# a loop-mounted image. Duplicates must end up sharing their extents, and
# every path keeps its bytes and its inode; a unique file is left alone.
#   xfs_reflink_test.sh CDC_BINARY
# Needs root for the loop mount (CI runs as root): otherwise exits 77, which
# CTest reports as "Skipped", never as passed. mkfs.xfs comes from xfsprogs
# (scripts/install-deps.sh).
set -euo pipefail
cdc="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
if [[ $(id -u) -ne 0 ]]; then echo "not root: cannot loop-mount an XFS image here"; exit 77; fi
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
sync
want="$(sha256sum < "$mnt/a")"
inodes_before="$(stat -c '%n %i' "$mnt/a" "$mnt/b" "$mnt/d/c" "$mnt/u")"
shared() { filefrag -v "$1" | grep -q shared; }
for f in a b d/c u; do
  if shared "$mnt/$f"; then fail "$f shares extents before the run"; fi
done

"$cdc" dupes -q --action reflink "$mnt" > "$work/out" || fail "cdc dupes exited $? ($(cat "$work/out"))"
n=$(grep -c "^reflinked '" "$work/out" || true)
[[ "$n" == 2 ]] || fail "expected 2 files reflinked, output:
$(cat "$work/out")"
sync
for f in a b d/c; do
  [[ "$(sha256sum < "$mnt/$f")" == "$want" ]] || fail "$f changed content"
  shared "$mnt/$f" || fail "$f does not share its extents after reflink"
done
if shared "$mnt/u"; then fail "the unique file u shares extents"; fi
[[ "$(stat -c '%n %i' "$mnt/a" "$mnt/b" "$mnt/d/c" "$mnt/u")" == "$inodes_before" ]] || fail "an inode changed"
# A second run finds the same duplicates (still three names) and reflinks again without harm.
"$cdc" dupes -q --action reflink "$mnt" > "$work/out2" || fail "second run exited $?"
[[ "$(sha256sum < "$mnt/b")" == "$want" ]] || fail "b changed on the second run"
echo "ok: 2 files reflinked on XFS, extents shared, bytes and inodes kept"
