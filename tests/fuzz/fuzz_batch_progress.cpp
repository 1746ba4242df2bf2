// An `attn batch --resume` progress file (OUTPUT.progress), read as the resume reads it; a JSON object
// is read a second time as if this run had written it (its fingerprint and job replaced), so that the
// fields past those checks are reached. A progress file taken is then resumed from: the working files
// of each output format cut back to the sizes it records.
#include <fstream>

#include "core/io/safetensors.hpp"
#include "native/batch_io.hpp"
#include "tests/fuzz/fuzz_target.hpp"

namespace {

namespace io = attn::cli::batch_io;

const char* const kFingerprint = "fuzz";
const attn::Json kJob = {{"model", "m"}, {"vocab", "v"}, {"backend", "exact"}};

// Working files of a resumed run, a few bytes each, as an interrupted run leaves them.
void resume_each_format(const std::string& output, const io::Progress& progress) {
  attn::batch::StageSelection selection;
  for (const std::string format : {"jsonl", "safetensors", "npy-dir"}) {
    const std::string out = output + "." + format;
    io::remove_path(out + ".part");
    if (format == "jsonl") std::ofstream(out + ".part") << "{\"line\":1}\n";
    std::ofstream(out + ".errors.jsonl.part") << "{\"line\":2}\n";
    io::prepare_output(out, format, true, progress.finishing);
    io::make_sink({out, format, &selection, {}}, progress.files);
    io::remove_path(out + ".part");
    io::remove_path(out + ".errors.jsonl.part");
  }
}

void read_and_resume(const std::string& output) {
  if (const auto progress = io::read_progress(output, kFingerprint, kJob)) resume_each_format(output, *progress);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::as_file(data, size, ".progress");
  const std::string output = path.substr(0, path.size() - std::string(".progress").size());
  attn::fuzz::guarded([&] { read_and_resume(output); });
  const attn::Json j = attn::Json::parse(data, data + size, nullptr, false);
  if (!j.is_object()) return 0;
  attn::Json ours = j;
  ours["fingerprint"] = kFingerprint, ours["job"] = kJob;
  attn::write_file_atomically(path, [&](std::ostream& s) { s << ours.dump(); });
  return attn::fuzz::guarded([&] { read_and_resume(output); });
}
