// SPDX-License-Identifier: Apache-2.0
// Python arguments -> library options, shared by every function of the
// module (the same names and rules as the C++ API: zero = the default).
#pragma once

#include <cdc/cdc.hpp>

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cdc::python {

/// The profile keywords of chunk(), iter_chunks(), Chunker and analyze().
/// The parameters (level, seed, polynomial, window) are None or an int:
/// None is the name's default, and a name that does not take one refuses it.
struct ProfileArgs {
    std::int64_t min_size = 0;
    std::int64_t avg_size = 0;
    std::int64_t max_size = 0;
    pybind11::object key = pybind11::none();
    pybind11::object level = pybind11::none();
    pybind11::object seed = pybind11::none();
    pybind11::object polynomial = pybind11::none();
    pybind11::object window = pybind11::none();
};

/// Validates the sizes (>= 0), the key (None, 32 bytes, or 64 hex digits)
/// and the parameters (None or an int in 0 .. 2**64-1); throws
/// cdc::OptionError (ValueError). The library checks each against the name.
Options make_options(const ProfileArgs& args);

/// The parameters the finder's name takes, with their values in use, as
/// {"level": 1, ...} (the keywords above); the rest are left out.
pybind11::dict parameters_in_use(const CutFinder& finder);

/// The cut finder of `algorithm` with these options (cdc::make_cut_finder).
std::shared_ptr<const CutFinder> make_finder(const std::string& algorithm, const ProfileArgs& args);

/// The names of `algorithms` (a name, "all", or an iterable of names)
/// resolved as `cdc analyze -a` resolves them ("all", and each parameter to
/// the names that take it), each into its finder: OptionError for an
/// unknown name or an option a name refuses.
std::vector<std::shared_ptr<const CutFinder>> resolve_algorithms(const pybind11::handle& algorithms,
                                                                 const ProfileArgs& args);

/// None / "none" -> DigestKind::none; else parse_digest_kind.
DigestKind parse_digest(const pybind11::object& digest);

}  // namespace cdc::python
