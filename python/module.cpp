// _attnlab: the engine for Python (the package attnlab, python/attnlab/, wraps it). Every call runs one
// of attn's subcommands through the CLI's own option parser (native/command_line.cpp), so the options,
// the messages and the --json documents are the CLI's; traces come back as the engine's tensors, not as
// printed text.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>

#include "core/base/error.hpp"
#include "core/model/loaded_model.hpp"
#include "core/model/pretrained.hpp"
#include "core/model/tutorial.hpp"
#include "native/commands.hpp"
#include "native/hub.hpp"

namespace py = pybind11;
using namespace attn;

namespace {

// --- running a command ---

// The commands print to std::cout (cli::print); a caller in Python reads it as the call's result.
class CapturedStdout {
 public:
  CapturedStdout() : old_(std::cout.rdbuf(text_.rdbuf())) {}
  ~CapturedStdout() { std::cout.rdbuf(old_); }
  CapturedStdout(const CapturedStdout&) = delete;
  CapturedStdout& operator=(const CapturedStdout&) = delete;
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* old_;
};

// Runs `args` (a subcommand and its options) on `commands`, the GIL released; the CLI's errors become
// ValueError with its message (std::bad_alloc becomes MemoryError on its own). Calls from several
// Python threads run one at a time: std::cout is the process's.
std::pair<int, std::string> run_commands(cli::CommandLine& commands, const std::vector<std::string>& args) {
  py::gil_scoped_release release;  // before the lock: a training run's callback takes the GIL under it
  static std::mutex one_at_a_time;
  const std::lock_guard<std::mutex> lock(one_at_a_time);
  CapturedStdout out;
  try {
    const int status = commands.run(args);
    return {status, out.text()};
  } catch (const CLI::CallForHelp&) {
    throw py::value_error("help is not an option here: attnlab.help(\"" + (args.empty() ? "" : args[0]) + "\") prints it");
  } catch (const CLI::ParseError& e) {
    throw py::value_error(e.what());
  } catch (const InputError& e) {
    throw py::value_error(e.what());
  }
}

CLI::App& subcommand(cli::CommandLine& commands, const std::string& name) {
  try {
    return *commands.app.get_subcommand(name);
  } catch (const CLI::OptionNotFound&) {
    throw py::value_error("no command '" + name + "' (tutorial, encode, batch, merge, train, heads, patch, attribute, generate, diff)");
  }
}

// The checkpoint a Model keeps loaded between calls (EncodeOptions::checkpoint_cache).
struct Checkpoint {
  std::shared_ptr<const Pretrained> loaded;
  std::shared_ptr<const DecoderModel> decoder;  // a Llama-family folder's (attn encode reloads it per run)
};

// --- traces ---

// A computed trace, shared by the NumPy arrays viewing its tensors.
struct PyTrace {
  cli::CommandResult result;

  const Stage& stage(const std::string& name) const {
    for (const Stage& s : result.trace->stages())
      if (s.name == name) return s;
    throw py::key_error("no stage '" + name + "' in this trace; nearest: " + near_names(name, names()));
  }

  // Floats: a read-only view of the engine's tensor, kept alive by the array. Ids and masks: int64 and
  // bool copies (the engine holds every stage as float32).
  py::array array(const std::string& name) const {
    const Stage& s = stage(name);
    const std::vector<py::ssize_t> shape(s.value.shape().begin(), s.value.shape().end());
    if (s.dtype == PrintDtype::float32) {
      auto* owner = new std::shared_ptr<const Trace>(result.trace);
      py::capsule base(owner, [](void* p) { delete static_cast<std::shared_ptr<const Trace>*>(p); });
      py::array a(py::dtype::of<float>(), shape, s.value.data(), base);
      py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
      return a;
    }
    if (s.dtype == PrintDtype::int64) {
      py::array_t<int64_t> a(shape);
      std::copy(s.value.begin(), s.value.end(), a.mutable_data());
      return std::move(a);
    }
    py::array_t<bool> a(shape);
    std::transform(s.value.begin(), s.value.end(), a.mutable_data(), [](float v) { return v != 0.0f; });
    return std::move(a);
  }

  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (const Stage& s : result.trace->stages()) names.push_back(s.name);
    return names;
  }
};

// `args` run with a result sink: the trace of attn tutorial or attn encode, or (another command, or
// the second tutorial, which prints its own document) none and the printed text.
py::tuple run_trace(const std::vector<std::string>& args, Checkpoint* checkpoint) {
  cli::CommandLine commands;
  cli::CommandResult result;
  commands.tutorial.result = commands.encode.result = &result;
  if (checkpoint) commands.encode.checkpoint_cache = &checkpoint->loaded;
  auto [status, text] = run_commands(commands, args);
  if (!result.trace) return py::make_tuple(status, text, py::none());
  return py::make_tuple(status, text, PyTrace{std::move(result)});
}

// --- models ---

py::dict numpy_dict(const std::vector<NamedTensor>& tensors) {
  py::dict out;
  for (const NamedTensor& t : tensors) {
    py::array_t<float> a(std::vector<py::ssize_t>(t.value.shape().begin(), t.value.shape().end()));
    std::copy(t.value.begin(), t.value.end(), a.mutable_data());
    out[py::str(t.name)] = std::move(a);
  }
  return out;
}

// The model attn encode's options `args` (as `encode ARGS`) name, loaded (a checkpoint into
// `checkpoint`, kept) and handed to `use`: its state dict, when `use` asks for it.
using ModelUse = std::function<void(const std::function<std::vector<NamedTensor>()>& state_dict)>;
void with_model(const std::vector<std::string>& args, Checkpoint& checkpoint, const ModelUse& use) {
  cli::CommandLine commands;
  cli::EncodeOptions& o = commands.encode;
  subcommand(commands, "encode").callback([&] {
    cli::resolve_model(o.model, o.quiet);
    if (pretrained_files(o.model)) {
      if (!checkpoint.loaded && !checkpoint.decoder) {
        const LoadedModel m = load_model(o.model, {});  // a decoder or a BERT / GPT-2 checkpoint
        checkpoint.loaded = m.pretrained;
        checkpoint.decoder = m.decoder;
      }
      if (checkpoint.decoder) return use([&] { return decoder_state_dict(*checkpoint.decoder); });
      return use([&] { return pretrained_state_dict(checkpoint.loaded->model); });
    }
    if (o.model.train) throw InputError("--train: a model's parameters are the same in either mode; drop it");
    const LoadedModel m = load_model(o.model, o.sentences.resolve(tutorial_sentences()));
    use([&] { return state_dict(*m.classifier); });
  });
  run_commands(commands, args);
}

py::dict model_state_dict(const std::vector<std::string>& args, Checkpoint& checkpoint) {
  std::vector<NamedTensor> tensors;
  with_model(args, checkpoint, [&](const auto& state_dict) { tensors = state_dict(); });
  return numpy_dict(tensors);
}

// --- training ---

// attn train's `args`; each log record (JSON text) goes to `on_record`. Python's signals are checked
// between steps: Ctrl-C stops the run as it stops attn train (its checkpoint written) and is raised
// here, as is an exception of `on_record`.
int run_training(const std::vector<std::string>& args, const std::function<void(std::string)>& on_record) {
  cli::CommandLine commands;
  std::optional<py::error_already_set> error;
  commands.train.on_record = [&](const Json& record) {
    py::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      on_record(record.dump());
      return true;
    } catch (py::error_already_set& e) {
      error.emplace(std::move(e));
      return false;
    }
  };
  int status = 0;
  try {
    status = run_commands(commands, args).first;
  } catch (...) {
    if (!error) throw;  // else the interruption first: the run stopped for it
  }
  if (error) throw std::move(*error);
  return status;
}

bool trains_language_model(const std::vector<std::string>& args) {
  cli::CommandLine commands;
  bool lm = false;
  subcommand(commands, "train").callback([&] { lm = train::trains_language_model(commands.train); });
  run_commands(commands, args);
  return lm;
}

// --- options ---

// Each option of a command by its long name ("--d-model"): "flag" (no value), "list" (repeatable) or
// "value"; a positional argument by its name ("a"): "positional".
py::dict option_kinds(const std::string& command) {
  cli::CommandLine commands;
  py::dict kinds;
  for (const CLI::Option* option : subcommand(commands, command).get_options()) {
    if (option->get_lnames().empty()) {
      if (!option->get_name(true).empty()) kinds[py::str(option->get_name(true))] = "positional";
      continue;
    }
    const std::string& name = option->get_lnames()[0];
    if (name == "help" || name == "help-all") continue;
    const char* kind = option->get_expected_max() == 0          ? "flag"
                       : option->get_items_expected_max() > 1 ? "list"
                                                              : "value";
    kinds[py::str("--" + name)] = kind;
  }
  return kinds;
}

std::string help(const std::string& command) {
  cli::CommandLine commands;
  return subcommand(commands, command).help();
}

// The time one in-process run of `args` takes as attn's main spends it (parsing, computing, printing
// the --json document to a discarded stream), the best of `repeats`: the yardstick of
// docs/python.md's speed figure.
double command_seconds(const std::vector<std::string>& args, size_t repeats) {
  double best = 1e30;
  for (size_t i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    cli::CommandLine commands;
    run_commands(commands, args);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

PYBIND11_MODULE(_attnlab, m) {
  m.doc() = "attnlab's engine (use the package attnlab)";
  py::class_<Checkpoint>(m, "Checkpoint", "a checkpoint kept loaded between calls (attnlab.Model's)").def(py::init<>());
  py::class_<PyTrace>(m, "Trace")
      .def_property_readonly("stages", &PyTrace::names)
      .def_property_readonly("tokens", [](const PyTrace& t) { return t.result.tokens; })
      .def("array", &PyTrace::array, py::arg("name"))
      .def("shape", [](const PyTrace& t, const std::string& name) {
        const auto& shape = t.stage(name).value.shape();
        return std::vector<size_t>(shape.begin(), shape.end());
      })
      .def("to_json", [](const PyTrace& t) {
        py::gil_scoped_release release;
        return t.result.json();
      })
      .def("text", [](const PyTrace& t) {
        py::gil_scoped_release release;
        return t.result.text();
      });
  m.def("run", &run_trace, py::arg("args"), py::arg("checkpoint") = nullptr,
        "runs attn ARGS; returns (exit status, printed text, Trace or None)");
  m.def("state_dict", &model_state_dict, py::arg("args"), py::arg("checkpoint"));
  m.def(
      "load", [](const std::vector<std::string>& args, Checkpoint& c) { with_model(args, c, [](const auto&) {}); },
      py::arg("args"), py::arg("checkpoint"), "loads the model `encode ARGS` names (a checkpoint into `checkpoint`)");
  m.def(
      "model_folder",
      [](const std::string& name) {
        ModelOptions o;
        o.model_name = name;
        cli::resolve_model(o, true);
        return o.model_dir;
      },
      py::arg("name"), "the folder --model NAME names: itself, or its Hub snapshot (fetched when missing)");
  m.def("train", &run_training, py::arg("args"), py::arg("on_record"));
  m.def("trains_language_model", &trains_language_model, py::arg("args"));
  m.def("option_kinds", &option_kinds, py::arg("command"));
  m.def("help", &help, py::arg("command"));
  m.def("command_seconds", &command_seconds, py::arg("args"), py::arg("repeats"));
}
