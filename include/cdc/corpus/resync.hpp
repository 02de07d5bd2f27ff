// SPDX-License-Identifier: Apache-2.0
// cdc/corpus/resync.hpp — how well an algorithm re-synchronises after edits.
//
//   auto edits = cdc::plan_edits(original.size(), {cdc::EditKind::insert, 1, 100, seed});
//   auto edited = cdc::apply_edits(original, edits, seed);
//   auto r = cdc::measure_resync(*cdc::make_cut_finder("fastcdc"), original, edited);
//   r.shared_pct;   // share of the edited bytes in chunks also in the original
//
// Edits are seeded and deterministic: the same (size, spec) always gives the
// same edits and the same edited bytes (on little-endian hosts, which the
// project targets).
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/digest.hpp>
#include <cdc/enum_names.hpp>
#include <cdc/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc {

/// insert: new random bytes at a position; remove ("delete"): bytes cut
/// out; overwrite: bytes replaced in place by random bytes; mixed: each edit
/// is one of the three, chosen at random.
enum class EditKind { insert, remove, overwrite, mixed };
inline constexpr std::array kEditKindNames = {
    EnumName<EditKind>{EditKind::insert, "insert"}, EnumName<EditKind>{EditKind::remove, "delete"},
    EnumName<EditKind>{EditKind::overwrite, "overwrite"}, EnumName<EditKind>{EditKind::mixed, "mixed"}};

/// Parses "insert", "delete", "overwrite" or "mixed"; throws OptionError.
EditKind parse_edit_kind(std::string_view name);
/// "insert", "delete", "overwrite", "mixed".
std::string_view to_string(EditKind kind) noexcept;

/// What edits to make.
struct EditSpec {
    EditKind kind = EditKind::insert;
    std::size_t count = 1;      ///< number of edits
    std::size_t size = 1;       ///< bytes per edit (clamped for delete/overwrite near the end)
    std::uint64_t seed = 1;
};

/// One edit, applied to the data as left by the edits before it.
struct Edit {
    EditKind kind = EditKind::insert;  ///< never mixed
    std::uint64_t offset = 0;          ///< position in the data at that moment
    std::uint64_t size = 0;            ///< bytes inserted, removed or overwritten
};

/// The edits of `spec` for data of `original_size` bytes: offsets uniform
/// over the data at that moment (inserts may append at the end). A delete or
/// overwrite of empty data becomes an insert.
std::vector<Edit> plan_edits(std::uint64_t original_size, const EditSpec& spec);

/// Applies `edits` in order; inserted and overwriting bytes are pseudo-random
/// from `seed`. Throws OptionError if an edit lies outside the data.
std::vector<std::uint8_t> apply_edits(std::span<const std::uint8_t> original, std::span<const Edit> edits,
                                      std::uint64_t seed);

/// The outcome of one original/edited pair for one algorithm.
struct ResyncResult {
    std::string algorithm;
    std::uint64_t chunks_orig = 0;
    std::uint64_t chunks_edited = 0;
    std::uint64_t bytes_orig = 0;
    std::uint64_t bytes_edited = 0;
    /// Bytes of the edited data lying in chunks whose fingerprint is also a
    /// chunk of the original.
    std::uint64_t shared_bytes = 0;
    /// 100 * shared_bytes / bytes_edited (100 for empty edited data).
    double shared_pct = 100.0;
};

/// Chunks both and compares fingerprints (`digest` must not be none).
ResyncResult measure_resync(const CutFinder& finder, std::span<const std::uint8_t> original,
                            std::span<const std::uint8_t> edited, DigestKind digest = DigestKind::blake3);

/// Several trials (seeds spec.seed, spec.seed + 1, ...) for several finders.
struct ResyncSummary {
    std::string algorithm;
    std::size_t trials = 0;
    double shared_pct_mean = 0;
    double shared_pct_min = 0;
    double chunks_orig = 0;        ///< the original's chunk count
    double chunks_edited_mean = 0;
    std::vector<ResyncResult> runs;  ///< one per trial
};

/// Runs `trials` trials: the same edited data (per trial) for every finder,
/// so the algorithms are compared on identical inputs.
std::vector<ResyncSummary> run_resync(std::span<const std::shared_ptr<const CutFinder>> finders,
                                      std::span<const std::uint8_t> original, const EditSpec& spec,
                                      std::size_t trials = 1, DigestKind digest = DigestKind::blake3);

}  // namespace cdc
