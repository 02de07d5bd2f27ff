# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the engine benchmarks, with $work and $repo set: starts a
# one-node Ceph with radosgw in $work/ceph (stopped when the script exits),
# exports its S3 credentials, and defines `s3 METHOD PATH [curl args...]`,
# a SigV4-signed request to it.
ceph_dir=$work/ceph
"$repo/tests/engines/ceph.sh" start "$ceph_dir"
trap '"$repo/tests/engines/ceph.sh" stop "$ceph_dir"' EXIT
# shellcheck disable=SC1091
. "$ceph_dir/env"
export AWS_ACCESS_KEY_ID=$CEPH_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$CEPH_S3_SECRET_KEY
s3() {
  local method=$1 path=$2; shift 2
  curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -X "$method" "$CEPH_S3_ENDPOINT/$path" "$@"
}
