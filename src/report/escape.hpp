// SPDX-License-Identifier: Apache-2.0
// File names in output: a name is any bytes but '/' and NUL — not always
// UTF-8, sometimes holding newlines, commas or terminal escape sequences.
// Every command shows names through these helpers (one scheme everywhere;
// README, "Names in output"):
//  - text (stdout tables and lists, stderr messages): printable UTF-8 as is;
//    a backslash as "\\"; control bytes (C0, DEL, C1), and every byte of an
//    invalid UTF-8 sequence as "\xHH". Lossless, and no byte of a name can
//    move the cursor or retitle a terminal.
//  - JSON: a name field "K" holds valid UTF-8 (each invalid byte becomes
//    U+FFFD; control characters use JSON's own escapes); when, and only when,
//    the name is not valid UTF-8, a sibling field "K_bytes" holds the exact
//    bytes in base64 (RFC 4648, padded). For a list of names "K", "K_bytes"
//    is a list of the same length with null for the names that are valid.
//  - CSV: the raw bytes of the name; a field holding ',', '"', '\n' or '\r'
//    (or starting or ending with a space) is quoted, '"' doubled (RFC 4180).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace cdc::tools {

/// True if `s` is well-formed UTF-8 (no overlong forms, no surrogates, at
/// most U+10FFFF).
bool is_valid_utf8(std::string_view s) noexcept;

/// `s` with each byte of an invalid sequence replaced by U+FFFD.
std::string to_valid_utf8(std::string_view s);

/// The text form above (for terminals, logs and messages).
std::string escape_text(std::string_view s);

/// RFC 4648 base64 (with padding) of the bytes of `s`.
std::string base64(std::string_view s);

/// The bytes of a base64 text; throws std::invalid_argument if malformed.
std::string base64_decode(std::string_view text);

/// Sets obj[key] (and obj[key + "_bytes"] when `name` is not UTF-8).
template <class Json>
void put_name(Json& obj, const std::string& key, std::string_view name) {
    obj[key] = to_valid_utf8(name);
    if (!is_valid_utf8(name)) obj[key + "_bytes"] = base64(name);
}

/// Sets obj[key] to a list of names (and obj[key + "_bytes"] when one of
/// them is not UTF-8: base64 for those, null for the others).
template <class Json, class Names>
void put_names(Json& obj, const std::string& key, const Names& names) {
    Json list = Json::array();
    bool all_valid = true;
    for (const auto& n : names) {
        list.push_back(to_valid_utf8(n));
        all_valid = all_valid && is_valid_utf8(n);
    }
    obj[key] = std::move(list);
    if (all_valid) return;
    Json bytes = Json::array();
    for (const auto& n : names) bytes.push_back(is_valid_utf8(n) ? Json(nullptr) : Json(base64(n)));
    obj[key + "_bytes"] = std::move(bytes);
}

/// j.dump() that cannot throw on bytes that are not UTF-8 (each becomes
/// U+FFFD): a safety net for text that is not a name put with put_name
/// (a message quoting one, a path typed by the user).
template <class Json>
std::string json_text(const Json& j) {
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

/// One CSV field, quoted when needed (RFC 4180).
std::string csv_field(std::string_view s);

}  // namespace cdc::tools
