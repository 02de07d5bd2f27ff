// SPDX-License-Identifier: Apache-2.0
// cdc/enum_names.hpp — one constexpr table of names per option enum
// (KernelLevel, DigestKind, EditKind, ...) and the lookups they all share:
// parse a name (OptionError naming the field and listing the names) and
// name a value.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

namespace cdc {

template <class E>
struct EnumName {
    E value;
    std::string_view name;
};

/// Throws OptionError("{field} = '{text}' is invalid: must be one of ...")
/// with field() = field.
[[noreturn]] void throw_unknown_name(std::string_view field, std::string_view text,
                                     std::span<const std::string_view> names);

/// The name of `value` in `table` ("?" if absent).
template <class E, std::size_t N>
constexpr std::string_view name_of(const std::array<EnumName<E>, N>& table, E value) noexcept {
    for (const auto& e : table)
        if (e.value == value) return e.name;
    return "?";
}

/// The value named `text` in `table`; throws OptionError naming `field`.
template <class E, std::size_t N>
E parse_name(const std::array<EnumName<E>, N>& table, std::string_view text, std::string_view field) {
    std::array<std::string_view, N> names{};
    for (std::size_t i = 0; i < N; ++i) {
        if (table[i].name == text) return table[i].value;
        names[i] = table[i].name;
    }
    throw_unknown_name(field, text, names);
}

}  // namespace cdc
