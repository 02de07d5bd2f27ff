// SPDX-License-Identifier: Apache-2.0
// cdc/store_s3.hpp — S3 pack storage for cdc::store (docs/STORE.md, "Packs
// in S3"): a store whose packs are objects in an S3 bucket, its catalog and
// settings in its directory. A program that opens such a store links the
// cdc_store_s3 library (libcurl) and calls enable_s3_packs() once first;
// without it, opening one throws StorageUnavailableError. (Built with the
// project, not installed yet, like this header.)
#pragma once

namespace cdc::store {

/// Lets Store::init and Store::open use S3 pack locations (idempotent).
void enable_s3_packs();

}  // namespace cdc::store
