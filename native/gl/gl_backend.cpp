#include "native/gl/gl_backend.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <new>
#include <stdexcept>

#include "core/base/error.hpp"
#include "core/model/transformer.hpp"  // Activation
#include "native/gl/gl_context.hpp"
#include "native/gl/gl_shaders.hpp"

namespace attn {
namespace {

constexpr size_t kMaxGroups = 65535;  // GL_MAX_COMPUTE_WORK_GROUP_COUNT guarantees this per axis

// The shaders index with 32-bit uints.
GLuint u32(size_t value) {
  if (value > std::numeric_limits<GLuint>::max())
    throw InputError("gl backend: size " + std::to_string(value) + " exceeds 32-bit indexing");
  return static_cast<GLuint>(value);
}

size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

class GlBuffer final : public Buffer {
 public:
  explicit GlBuffer(size_t size) : Buffer(size) {
    glGenBuffers(1, &id);
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, id);
    // Never empty: a zero-sized buffer cannot be bound.
    glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>(std::max<size_t>(size, 1) * sizeof(float)),
                 nullptr, GL_DYNAMIC_COPY);
  }
  ~GlBuffer() override { glDeleteBuffers(1, &id); }
  GLuint id = 0;
};

const GlBuffer& gl_buffer(const Buffer& buffer) { return static_cast<const GlBuffer&>(buffer); }

// One dispatch: a program, its storage buffers and uniforms (by name; one the compiler removed as
// unused has location −1, which GL ignores).
class Launch {
 public:
  explicit Launch(GLuint program) : program_(program) { glUseProgram(program); }
  Launch& bind(GLuint binding, const Buffer& buffer) {
    glBindBufferBase(GL_SHADER_STORAGE_BUFFER, binding, gl_buffer(buffer).id);
    return *this;
  }
  Launch& set(const char* name, size_t value) {
    glUniform1ui(glGetUniformLocation(program_, name), u32(value));
    return *this;
  }
  Launch& set(const char* name, float value) {
    glUniform1f(glGetUniformLocation(program_, name), value);
    return *this;
  }
  Launch& flag(const char* name, bool value) {
    glUniform1i(glGetUniformLocation(program_, name), value ? 1 : 0);
    return *this;
  }
  // x × y work groups; later dispatches and downloads see what this one wrote.
  void run(size_t x, size_t y = 1) {
    if (x > kMaxGroups || y > kMaxGroups)
      throw InputError("gl backend: " + std::to_string(x) + "×" + std::to_string(y) +
                       " work groups exceed the 65535 per axis that GL guarantees");
    glDispatchCompute(u32(x), u32(y), 1);
    glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
  }
  // `groups` work groups numbered y·X + x by the shader (which skips the excess): more than one axis holds.
  void run_flat(size_t groups) {
    size_t x = std::min(std::max<size_t>(groups, 1), kMaxGroups);
    run(x, ceil_div(std::max<size_t>(groups, 1), x));
  }
  // Grid-stride loops over `size` elements in groups of 256 invocations.
  void run_elements(size_t size) { run(std::clamp<size_t>(ceil_div(size, 256), 1, kMaxGroups)); }

 private:
  GLuint program_;
};

class GlBackend final : public Backend {
 public:
  explicit GlBackend(gl::ContextSource source) : context_(source) {
    glGetIntegerv(GL_MAX_SHADER_STORAGE_BLOCK_SIZE, &max_block_bytes_);
    glGetIntegerv(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE, &max_shared_bytes_);
  }
  ~GlBackend() override {
    partial_.reset();
    stats_.reset();
    for (auto& entry : programs_) glDeleteProgram(entry.second);
  }
  std::string name() const override { return "gl"; }
  const std::string& device() const { return context_.description(); }
  bool software() const { return context_.software(); }

  BufferPtr allocate(size_t size) override {
    if (size > static_cast<size_t>(max_block_bytes_) / sizeof(float))
      throw InputError("gl backend: a buffer of " + std::to_string(size) +
                       " floats exceeds this device's largest shader storage block (" +
                       std::to_string(max_block_bytes_) + " bytes)");
    auto buffer = std::make_unique<GlBuffer>(size);
    if (glGetError() == GL_OUT_OF_MEMORY) throw std::bad_alloc();
    return buffer;
  }
  void upload(Buffer& dst, const float* src, size_t size) override {
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, gl_buffer(dst).id);
    glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, bytes(dst, size), src);
  }
  void download(const Buffer& src, float* dst, size_t size) override {
    glBindBuffer(GL_SHADER_STORAGE_BUFFER, gl_buffer(src).id);
    glGetBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, bytes(src, size), dst);
  }
  void synchronize() override { glFinish(); }

  void matmul(const Buffer& a, const Buffer& b, Buffer& c, size_t m, size_t k, size_t n,
              bool b_transposed) override {
    check_loops(ceil_div(k, 16) * 18, "matmul with k = " + std::to_string(k));  // 16 inner steps and 2 more
    Launch(program("matmul", b_transposed ? "#define B_TRANSPOSED 1\n" : ""))
        .bind(0, a).bind(1, b).bind(2, c).set("m", m).set("k", k).set("n", n)
        .run(ceil_div(n, 64), ceil_div(m, 64));
  }
  void add_bias(Buffer& x, const Buffer& bias, size_t rows, size_t n) override {
    Launch(program("add")).bind(0, x).bind(1, bias).bind(2, x).set("size", rows * n).set("period", n)
        .run_elements(rows * n);
  }
  void add(const Buffer& a, const Buffer& b, Buffer& out, size_t size) override {
    Launch(program("add")).bind(0, a).bind(1, b).bind(2, out).set("size", size).set("period", size)
        .run_elements(size);
  }
  void activation(Buffer& x, size_t size, Activation kind) override {
    Launch(program("activation")).bind(0, x).set("size", size).set("kind", size_t{kind == Activation::gelu})
        .run_elements(size);
  }
  void softmax_rows(Buffer& x, size_t rows, size_t n) override {
    check_loops(3 * ceil_div(n, 256) + 16, "softmax over rows of " + std::to_string(n));  // 3 passes, 2 reductions
    Launch(program("softmax")).bind(0, x).set("rows", rows).set("n", n).run_flat(rows);
  }
  void layer_norm(const Buffer& x, const Buffer& gamma, const Buffer& beta, Buffer& y, size_t rows, size_t n,
                  float eps) override {
    check_loops(3 * ceil_div(n, 256) + 16, "layer_norm over rows of " + std::to_string(n));
    Launch(program("layer_norm")).bind(0, x).bind(1, gamma).bind(2, beta).bind(3, y)
        .set("rows", rows).set("n", n).set("eps", eps).run_flat(rows);
  }
  void attention(const Buffer& q, const Buffer& k, const Buffer& v, const Buffer* key_keep, Buffer& out,
                 const AttentionShape& shape, Buffer* weights) override;

 private:
  static size_t bytes(const Buffer& buffer, size_t size);
  GLuint program(const std::string& name, const std::string& defines = "");
  std::string attention_defines(size_t head_dim) const;
  void check_loops(size_t iterations, const std::string& what) const;
  size_t chunk_keys(const AttentionShape& shape) const;
  void grow(BufferPtr& buffer, size_t size);

  gl::Context context_;  // first member: made first, released last
  GLint max_block_bytes_ = 0, max_shared_bytes_ = 0;
  std::map<std::string, GLuint> programs_;  // by name + defines, built on first use
  BufferPtr partial_;  // attention's per-chunk softmax state
  BufferPtr stats_;    // each attention row's max and sum, for the weights
};

size_t GlBackend::bytes(const Buffer& buffer, size_t size) {
  if (size > buffer.size()) throw std::out_of_range("gl backend: transfer larger than the buffer");
  return size * sizeof(float);
}

GLuint GlBackend::program(const std::string& name, const std::string& defines) {
  auto found = programs_.find(name + '\n' + defines);
  if (found != programs_.end()) return found->second;
  GLuint built = gl::build_program(name, defines);
  programs_.emplace(name + '\n' + defines, built);
  return built;
}

// Keys staged per tile of attention.comp: fewer as heads grow, to fit shared memory.
size_t key_tile(size_t head_dim) { return std::clamp<size_t>(3072 / head_dim, 1, 32); }

// The head size is compiled in (register arrays).
std::string GlBackend::attention_defines(size_t head_dim) const {
  size_t shared = (2 * key_tile(head_dim) * head_dim + key_tile(head_dim)) * sizeof(float);
  if (shared > static_cast<size_t>(max_shared_bytes_))
    throw InputError("gl backend: head_dim " + std::to_string(head_dim) + " needs " + std::to_string(shared) +
                     " bytes of shared memory; this device has " + std::to_string(max_shared_bytes_));
  return "#define HEAD_DIM " + std::to_string(head_dim) + "u\n#define KEY_TILE " +
         std::to_string(key_tile(head_dim)) + "u\n";
}

// Mesa's llvmpipe silently ends a shader invocation after 65535 loop iterations in all: there, a shape
// that would need more is refused rather than computed wrong. Hardware renderers have no such limit.
void GlBackend::check_loops(size_t iterations, const std::string& what) const {
  if (context_.software() && iterations > 60000)
    throw InputError("gl backend on " + context_.description() + ": " + what +
                     " needs more loop iterations per shader invocation than llvmpipe runs (65535)");
}

// Keys per chunk of attention.comp: on llvmpipe, as many as fit the loop budget (about 2·D + 3
// iterations a key, and room for the rest); elsewhere all of them, so that one pass does all.
size_t GlBackend::chunk_keys(const AttentionShape& s) const {
  if (!context_.software()) return std::max<size_t>(s.seq_k, 1);
  size_t tile = key_tile(s.head_dim);
  return std::max(tile, 24576 / (2 * s.head_dim + 3) / tile * tile);
}

// Pass 1 (attention.comp) computes each query's softmax state over each chunk of keys; pass 2
// (attention_combine.comp) merges the chunks into the output; the weights, when asked for, are a third.
void GlBackend::attention(const Buffer& q, const Buffer& k, const Buffer& v, const Buffer* key_keep, Buffer& out,
                          const AttentionShape& s, Buffer* weights) {
  if (s.offsets) throw std::logic_error("gl backend: packed sequences are not supported");  // packs_sequences()
  if (s.causal && s.seq_q != s.seq_k) throw InputError("a causal mask needs as many queries as keys");
  const std::string defines = attention_defines(s.head_dim);
  const size_t rows = s.batch * s.heads * s.seq_q, keys = chunk_keys(s), chunks = ceil_div(s.seq_k, keys);
  // The combine pass's grid-stride loop, each element of which may average all Sk values.
  check_loops(ceil_div(rows * s.head_dim, kMaxGroups * 256) * (s.seq_k + 2 * chunks),
              "attention over " + std::to_string(s.seq_k) + " keys");
  grow(partial_, rows * chunks * (s.head_dim + 2));
  if (weights) grow(stats_, 2 * rows);
  // Bindings a call does not use get q: GL wants every declared block bound; the shader never reads it.
  const Buffer& keep = key_keep ? *key_keep : q;
  const Buffer& stats = weights ? *stats_ : q;
  auto sizes = [&](Launch& launch) -> Launch& {
    return launch.set("batch", s.batch).set("heads", s.heads).set("seq_q", s.seq_q).set("seq_k", s.seq_k);
  };
  Launch pass1(program("attention", defines));
  sizes(pass1).bind(0, q).bind(1, k).bind(2, v).bind(3, keep).bind(4, *partial_).set("scale", s.scale)
      .flag("has_keep", key_keep != nullptr).flag("causal", s.causal).set("chunk_keys", keys).set("chunks", chunks)
      .run_flat(s.batch * s.heads * ceil_div(s.seq_q, 64) * chunks);
  Launch pass2(program("attention_combine", defines));
  sizes(pass2).bind(2, v).bind(4, *partial_).bind(5, out).bind(6, stats).set("chunks", chunks)
      .flag("write_stats", weights != nullptr).run_elements(rows * s.head_dim);
  if (!weights) return;
  Launch weights_pass(program("attention_weights", defines));
  sizes(weights_pass).bind(0, q).bind(1, k).bind(3, keep).bind(6, stats).bind(7, *weights).set("scale", s.scale)
      .flag("has_keep", key_keep != nullptr).flag("causal", s.causal).run_elements(rows * s.seq_k);
}

void GlBackend::grow(BufferPtr& buffer, size_t size) {
  if (!buffer || buffer->size() < size) buffer = allocate(size);
}

}  // namespace

std::unique_ptr<Backend> make_gl_backend(std::string& device, bool& software, gl::ContextSource source) {
  auto backend = std::make_unique<GlBackend>(source);
  device = backend->device();
  software = backend->software();
  return backend;
}

}  // namespace attn
