// attn-bench: `attn bench` on its own, for the WebAssembly build (node attn-bench.js sdpa ...).
#include <iostream>

#include "core/base/error.hpp"
#include "native/bench.hpp"

int main(int argc, char** argv) {
  CLI::App app{"attn bench (WebAssembly): time the kernels and the model", "attn-bench"};
  attn::cli::BenchOptions options;
  attn::cli::add_bench_options(app, options);
  try {
    app.parse(argc, argv);
    attn::cli::run_bench(options);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const attn::InputError& e) {
    std::cerr << "attn-bench: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
