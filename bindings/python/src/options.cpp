// SPDX-License-Identifier: Apache-2.0
#include "options.hpp"

#include "pinned_buffer.hpp"

#include "algorithm_list.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <limits>

namespace py = pybind11;

namespace cdc::python {

namespace {
std::size_t size_arg(const char* name, std::int64_t value) {
    if (value < 0) throw OptionError(fmt::format("{} = {} is invalid: must be >= 0 (0 = the default)", name, value));
    return static_cast<std::size_t>(value);
}

std::optional<Key> parse_key(const py::object& key) {
    if (key.is_none()) return std::nullopt;
    if (py::isinstance<py::str>(key)) return parse_key_hex(key.cast<std::string>());
    if (!PyObject_CheckBuffer(key.ptr()))
        throw OptionError(fmt::format("key must be 32 bytes or 64 hex digits, not {}",
                                      py::str(py::type::of(key).attr("__name__")).cast<std::string>()));
    const PinnedBuffer b(key);
    Key k{};
    if (b.bytes().size() != k.size())
        throw OptionError(fmt::format("key is {} bytes long: it must be 32 bytes (or 64 hex digits)", b.bytes().size()));
    std::memcpy(k.data(), b.bytes().data(), k.size());
    return k;
}
// None, or an int in 0 .. high (ranges per name are the library's).
std::optional<std::uint64_t> parameter_arg(const char* name, const py::object& value, std::uint64_t high) {
    if (value.is_none()) return std::nullopt;
    if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value))
        throw OptionError(fmt::format("{} must be an int or None, not {}", name,
                                      py::str(py::type::of(value).attr("__name__")).cast<std::string>()),
                          name);
    const auto v = value.cast<py::int_>();
    if (v < py::int_(0) || v > py::int_(high))
        throw OptionError(fmt::format("{} = {} is invalid: must be 0..{} (None = the default)", name,
                                      py::str(value).cast<std::string>(), high),
                          name);
    return v.cast<std::uint64_t>();
}
}  // namespace

Options make_options(const ProfileArgs& args) {
    Options o;
    o.min_size = size_arg("min_size", args.min_size);
    o.normal_size = size_arg("avg_size", args.avg_size);
    o.max_size = size_arg("max_size", args.max_size);
    o.key = parse_key(args.key);
    if (const auto level = parameter_arg("level", args.level, std::numeric_limits<int>::max()))
        o.normalization_level = static_cast<int>(*level);
    o.seed = parameter_arg("seed", args.seed, std::numeric_limits<std::uint64_t>::max());
    o.polynomial = parameter_arg("polynomial", args.polynomial, std::numeric_limits<std::uint64_t>::max());
    if (const auto window = parameter_arg("window", args.window, std::numeric_limits<std::size_t>::max()))
        o.window_size = static_cast<std::size_t>(*window);
    return o;
}

py::dict parameters_in_use(const CutFinder& finder) {
    py::dict out;
    const AlgorithmInfo* a = &finder.info();
    const Profile& p = finder.profile();
    if (a->normalization_level.accepted) out["level"] = p.normalization_level;
    if (a->seed.accepted) out["seed"] = p.seed;
    if (a->polynomial.accepted) out["polynomial"] = p.polynomial;
    if (a->window_size.accepted) out["window"] = p.window_size;
    return out;
}

std::shared_ptr<const CutFinder> make_finder(const std::string& algorithm, const ProfileArgs& args) {
    return make_cut_finder(algorithm, make_options(args));
}

std::vector<std::shared_ptr<const CutFinder>> resolve_algorithms(const py::handle& algorithms, const ProfileArgs& args) {
    auto one = [](py::handle item) {
        if (!py::isinstance<py::str>(item)) throw OptionError("algorithms must be str (or a list of them)");
        return item.cast<std::string>();
    };
    std::vector<std::string> names;
    if (py::isinstance<py::str>(algorithms)) {
        names.push_back(one(algorithms));
    } else {
        for (py::handle item : algorithms) names.push_back(one(item));
    }
    if (names.empty()) throw OptionError("algorithms is empty");
    return tools::resolve_algorithm_list(fmt::format("{}", fmt::join(names, ",")), make_options(args),
                                         /*quiet=*/true);
}

DigestKind parse_digest(const py::object& digest) {
    if (digest.is_none()) return DigestKind::none;
    if (!py::isinstance<py::str>(digest))
        throw OptionError("digest must be None or a name: 'blake3', 'sha256' or 'xxh3'");
    return parse_digest_kind(digest.cast<std::string>());
}

}  // namespace cdc::python
