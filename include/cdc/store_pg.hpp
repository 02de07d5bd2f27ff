// SPDX-License-Identifier: Apache-2.0
// cdc/store_pg.hpp — a PostgreSQL catalog for cdc::store (docs/STORE.md, "A
// PostgreSQL catalog"): a store whose index, manifests and settings are in
// a PostgreSQL database that writers on many hosts share, its directory
// holding only the marker and the connection string (DIR/catalog). A
// program that opens such a store links the cdc_store_pg library (libpq)
// and calls enable_pg_catalog() once first; without it, opening one throws
// StorageUnavailableError. (Built with the project, not installed yet, like
// this header.)
#pragma once

namespace cdc::store {

/// Lets Store::init and Store::open use PostgreSQL catalogs (idempotent).
void enable_pg_catalog();

}  // namespace cdc::store
