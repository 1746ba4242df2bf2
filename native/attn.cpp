// attn: the command-line front end.
//   attn tutorial   the first tutorial's attention, stage by stage, with PyTorch's numbers
//   attn encode     the second tutorial's Transformer classifier on sentences or token ids
//   attn batch      the same model over a file of any size, streaming (attn merge joins its shards)
//   attn train      the classifier trained on a task or labelled data, as PyTorch trains it
//   attn heads      every head scored as a previous-token, duplicate-token or induction head
//   attn patch      activation patching from a clean into a corrupted input
//   attn generate   a GPT-2 checkpoint continues a prompt, token by token
//   attn diff       two traces compared stage by stage (or a trace against PyTorch's .npy tensors)
//   attn bench      the kernels and the model timed, side by side with PyTorch
// Exit status: 0 success, 1 attn diff found a difference beyond its tolerance, 2 bad usage or input (with a message naming the problem), 3 attn batch
// computed every good item but some items were bad, 130 attn train interrupted (after its checkpoint).
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <new>

#include "core/base/error.hpp"
#include "native/bench.hpp"
#include "native/commands.hpp"

int main(int argc, char** argv) {
  // Keep freed tensors' memory for the next ones instead of handing it back to the kernel and faulting
  // it in again: a training step allocates and frees the same sizes each time (15 % of a step's time).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  attn::cli::CommandLine commands;
  attn::cli::BenchOptions bench;
  attn::cli::add_bench_command(commands.app, bench);
  try {
    return commands.run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const CLI::CallForHelp& e) {
    return commands.app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return commands.app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "attn: " << e.what() << "\nRun 'attn --help' for usage.\n";
    return 2;
  } catch (const attn::InputError& e) {
    std::cerr << "attn: " << e.what() << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "attn: out of memory: the requested sizes do not fit\n";
    return 2;
  }
}
