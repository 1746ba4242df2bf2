#version 430
// The attention weights [B, H, Sq, Sk] that attention.comp used, written only when a caller shows them:
// w = exp(s − M) / L with the row's M and L from attention_combine.comp's stats and s the scaled score
// computed as there, LOWEST when masked (a row with no kept key has M = LOWEST, L = Sk: uniform weights).
// The host defines HEAD_DIM.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 3) readonly buffer Keep { float keep[]; };
layout(std430, binding = 6) readonly buffer Stats { float stats[]; };
layout(std430, binding = 7) writeonly buffer Weights { float weights[]; };
uniform uint batch;
uniform uint heads;
uniform uint seq_q;
uniform uint seq_k;
uniform float scale;
uniform bool has_keep;
uniform bool causal;
const float LOWEST = -3.402823e38;

void main() {
  uint size = batch * heads * seq_q * seq_k;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < size; e += stride) {
    uint j = e % seq_k, row = e / seq_k;
    uint i = row % seq_q, h = (row / seq_q) % heads, b = row / seq_q / heads;
    bool kept = (!has_keep || keep[b * seq_k + j] != 0.0) && !(causal && j > i);
    float s = LOWEST;
    if (kept) {
      uint q_at = ((b * seq_q + i) * heads + h) * HEAD_DIM, k_at = ((b * seq_k + j) * heads + h) * HEAD_DIM;
      float dot_qk = 0.0;
      for (uint d = 0u; d < HEAD_DIM; ++d) dot_qk = fma(q[q_at + d], k[k_at + d], dot_qk);
      s = dot_qk * scale;
    }
    weights[e] = exp(s - stats[2u * row]) / stats[2u * row + 1u];
  }
}
