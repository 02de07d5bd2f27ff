// What a client learns from Info, and the chunker it derives from it.
#include "client_api.hpp"

#include <fmt/format.h>

namespace cdc::transfer {

ServerParams params_from(const v1::InfoReply& r) {
    ServerParams p;
    p.algorithm = r.algorithm();
    p.profile.min_size = r.min_size();
    p.profile.normal_size = r.avg_size();
    p.profile.max_size = r.max_size();
    p.profile.keyed = r.keyed();
    p.zstd_level = r.zstd_level();
    p.store_id = r.store_id();
    p.max_message_bytes = r.max_message_bytes();
    p.max_list_chunks = r.max_list_chunks();
    return p;
}

std::shared_ptr<const CutFinder> client_finder(const ServerParams& params, const std::optional<Key>& key) {
    Options o;
    o.min_size = params.profile.min_size;
    o.normal_size = params.profile.normal_size;
    o.max_size = params.profile.max_size;
    if (params.profile.keyed) {
        if (!key)
            throw OptionError("the server's store is keyed: give its key (--key-file) to chunk like it");
        o.key = key;
    }
    return make_cut_finder(params.algorithm, o);
}

}  // namespace cdc::transfer
