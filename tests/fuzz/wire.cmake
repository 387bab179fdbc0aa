# fuzz_wire: the data-plane wire decoder and the aggregation engine
# behind it. Included by tests/fuzz/CMakeLists.txt; corpus in wire_corpus/.
set(fuzz_wire_LIBS switchagg_engine_internal)
# wire_corpus_gen writes the seed corpus (run once; the files are committed).
add_executable(wire_corpus_gen ${CMAKE_CURRENT_LIST_DIR}/wire_corpus_gen.cc)
target_link_libraries(wire_corpus_gen PRIVATE switchagg_wire)
switchagg_warnings(wire_corpus_gen)
