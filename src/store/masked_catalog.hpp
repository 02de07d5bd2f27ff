// SPDX-License-Identifier: Apache-2.0
// An encrypted store's catalog as its readers and writers see it: a Catalog
// (SQLite or PostgreSQL) whose manifests' whole-file digests are kept
// masked (crypto::MasterKey::digest_mask over the file's name and size), so
// that the catalog does not tell whether a known file is stored
// (docs/STORE.md "Encryption at rest"). Every other call passes through;
// digests go in masked (commit, still_there) and come out plain.
#pragma once

#include "catalog.hpp"
#include "master_key.hpp"  // (src/crypto)

#include <memory>

namespace cdc::store::detail {

/// `inner` with its manifest digests masked under `key`; its connections
/// (connect()) are masked alike.
std::unique_ptr<Catalog> mask_file_digests(std::unique_ptr<Catalog> inner,
                                           std::shared_ptr<const crypto::MasterKey> key);

}  // namespace cdc::store::detail
