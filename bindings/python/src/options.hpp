// Python arguments -> library options, shared by every function of the
// module (the same names and rules as the C++ API: zero = the default).
#pragma once

#include <cdc/cdc.hpp>

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>

namespace cdc::python {

/// The profile keywords of chunk(), iter_chunks(), Chunker and analyze().
struct ProfileArgs {
    std::int64_t min_size = 0;
    std::int64_t avg_size = 0;
    std::int64_t max_size = 0;
    pybind11::object key = pybind11::none();
};

/// Validates the sizes (>= 0) and the key (None, 32 bytes, or 64 hex
/// digits); throws cdc::OptionError (ValueError).
Options make_options(const ProfileArgs& args);

/// The cut finder of `algorithm` with these options (cdc::make_cut_finder).
std::shared_ptr<const CutFinder> make_finder(const std::string& algorithm, const ProfileArgs& args);

/// None / "none" -> DigestKind::none; else parse_digest_kind.
DigestKind parse_digest(const pybind11::object& digest);

}  // namespace cdc::python
