#pragma once
// Folders of the source tree this build was configured from, for the tests and benchmarks that read
// its configs and data. They come from one generated source (source_tree.cpp.in, library
// knot_source_tree), not from compile definitions: a definition that holds an absolute path puts that
// path into every compile command of its target, and ccache could then reuse none of them in a clone
// in another folder (CI's).
namespace knot::source_tree {
const char* configs_dir();    // configs/
const char* test_data_dir();  // tests/data/
const char* schema_dir();     // tests/problems/schema/
}  // namespace knot::source_tree
