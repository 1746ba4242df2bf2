// `attn bench`: the performance cases of docs/speed.md's tables, timed here and (with --torch) in PyTorch in
// the same run (tests/bench_torch.py), reported side by side as ratios. Built natively into `attn`
// and as `attn-bench.js` for node (the WebAssembly build).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/base/json.hpp"

namespace attn::cli {

struct BenchOptions {
  std::vector<std::string> cases;  // tutorial, sdpa, mha, encoder, gemm, train, patch; empty = all
  std::string threads, isa, backend = "cpu", torch_python = "/usr/bin/python3", dump;
  bool json = false, quick = false, torch = false;
};
void add_bench_options(CLI::App& cmd, BenchOptions& o);
void add_bench_command(CLI::App& app, BenchOptions& o);
// Runs the cases and prints the table (or the JSON document).
void run_bench(const BenchOptions& o);

}  // namespace attn::cli
