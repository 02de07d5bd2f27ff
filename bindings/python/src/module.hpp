// SPDX-License-Identifier: Apache-2.0
// The pieces of the _core extension module, one file each.
#pragma once

#include <pybind11/pybind11.h>

namespace cdc::python {

void add_chunk(pybind11::module_& m);     // chunk(), Chunks          (chunk.cpp)
void add_chunker(pybind11::module_& m);   // Chunker, iter_chunks()   (chunker.cpp)
void add_analyze(pybind11::module_& m);   // analyze()                (analyze.cpp)
void add_dupes(pybind11::module_& m);     // dupes()                  (dupes.cpp)
void add_distributed(pybind11::module_& m);  // _dist_* (cdc_chunkers.distributed) (distributed.cpp)

}  // namespace cdc::python
