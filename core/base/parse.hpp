// Strict text to values, as every front end reads an option (a CLI flag, a playground setting): the
// whole text must be the number, and the error names the option.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace attn {

// A decimal integer >= min, or an InputError naming the flag.
size_t parse_size(const std::string& flag, const std::string& text, size_t min);
// --threads: a count >= 1, or "auto" (every core).
size_t parse_threads(const std::string& text);
// A finite decimal number, or an InputError naming the flag.
double parse_number(const std::string& flag, const std::string& text);
// The items of a comma-separated list, empty ones kept ("a,,b" → a, "", b; "" → one empty item).
std::vector<std::string> split_commas(const std::string& text);
// A comma-separated list of choices among `names`, each named once: their indices in `names`. Errors
// name `flag` and call an unknown item an unknown `what` ("--detect: unknown head kind 'x' (expected …)").
std::vector<size_t> parse_choices(const std::string& flag, const std::string& text, const std::vector<std::string>& names,
                                  const std::string& what);
// A whole file's bytes; `what` names it in the InputError when it cannot be read.
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace attn
