// SPDX-License-Identifier: Apache-2.0
// Internal: the tables of the compatibility chunkers (COMPAT.md), from the
// files beside the spec; compat_tables.cpp holds them.
#pragma once

#include <array>
#include <cstdint>

namespace cdc::detail {

/// fastcdc-rs GEAR (gear-fastcdc-rs.txt), used by v2016 and v2020.
const std::array<std::uint64_t, 256>& fastcdc_rs_gear() noexcept;
/// fastcdc-rs ronomon table (ronomon-fastcdc-rs.txt).
const std::array<std::uint32_t, 256>& ronomon_table() noexcept;
/// BorgBackup's buzhash table_base (buzhash-borg.txt), before the seed.
const std::array<std::uint32_t, 256>& borg_buzhash_table() noexcept;
/// casync's buzhash_table (buzhash-casync.txt).
const std::array<std::uint32_t, 256>& casync_buzhash_table() noexcept;

}  // namespace cdc::detail
