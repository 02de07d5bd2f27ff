// SPDX-License-Identifier: Apache-2.0
// What a client learns from Info, and the chunker it derives from it.
#include "client_api.hpp"

#include <fmt/format.h>

#include <cstring>

namespace cdc::transfer {

ServerParams params_from(const v1::InfoReply& r) {
    ServerParams p;
    p.algorithm = r.algorithm();
    p.profile.min_size = r.min_size();
    p.profile.normal_size = r.avg_size();
    p.profile.max_size = r.max_size();
    p.profile.keyed = r.keyed();
    p.profile.normalization_level = r.normalization_level();
    p.profile.seed = r.seed();
    p.profile.polynomial = r.polynomial();
    p.profile.window_size = static_cast<std::size_t>(r.window_size());
    p.zstd_level = r.zstd_level();
    p.store_id = r.store_id();
    p.max_message_bytes = r.max_message_bytes();
    p.max_list_chunks = r.max_list_chunks();
    p.group_lists = r.group_lists();
    p.group_digest_bytes = r.group_digest_bytes() == 16 ? 16 : 32;
    p.data_ids_optional = r.data_ids_optional();
    p.key_check = r.key_check();
    p.key_missing = r.key_missing();
    p.encrypted = r.encrypted();
    p.tree_ids = r.tree_ids();
    if (r.chunker_key().size() == std::tuple_size_v<Key>) {
        Key k;
        std::memcpy(k.data(), r.chunker_key().data(), k.size());
        p.chunker_key = k;
    }
    return p;
}

std::shared_ptr<const CutFinder> client_finder(const ServerParams& params, const std::optional<Key>& given) {
    const std::optional<Key>& key = given ? given : params.chunker_key;
    if (params.profile.keyed && !key && params.encrypted)
        throw OptionError("the server's store is encrypted and keyed: its server sends the chunker key only to "
                          "clients with its token, and this one requires none (start cdc serve with a token)");
    if (params.profile.keyed && !key) throw OptionError("the server's store is keyed: give its key to chunk like it", "key");
    // A wrong key cuts elsewhere: files the store could not dedup, under its name.
    if (params.profile.keyed && !params.key_check.empty() && store::key_check_value(*key) != params.key_check)
        throw OptionError("this is not the key of the server's store (its key check value differs): wrong key", "key");
    return make_cut_finder(params.algorithm, store::chunking_options(params.algorithm, params.profile, key));
}

}  // namespace cdc::transfer
