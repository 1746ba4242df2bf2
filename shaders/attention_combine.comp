#version 430
// Fused attention, pass 2 of 2: merges attention.comp's chunks of each query row, one invocation per
// output element: M = max m_c, L = Σ l_c·exp(m_c − M), out = Σ acc_c·exp(m_c − M) / L. A row with no kept
// key (M = LOWEST) has, as with the tutorial's −1e9 masking, uniform weights over all Sk keys: the mean
// of the values. With write_stats, (M, L) per row for attention_weights.comp (L = Sk for such a row).
// The host defines HEAD_DIM. out [B, Sq, H, D]; stats [B, H, Sq, 2].
layout(local_size_x = 256) in;
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 4) readonly buffer Partial { float partial[]; };
layout(std430, binding = 5) writeonly buffer Out { float result[]; };
layout(std430, binding = 6) writeonly buffer Stats { float stats[]; };
uniform uint batch;
uniform uint heads;
uniform uint seq_q;
uniform uint seq_k;
uniform uint chunks;
uniform bool write_stats;
const float LOWEST = -3.402823e38;

float mean_value(uint b, uint h, uint d) {
  float sum = 0.0;
  for (uint j = 0u; j < seq_k; ++j) sum += v[((b * seq_k + j) * heads + h) * HEAD_DIM + d];
  return sum / float(seq_k);
}

void main() {
  uint size = batch * heads * seq_q * HEAD_DIM;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < size; e += stride) {
    uint d = e % HEAD_DIM, row = e / HEAD_DIM;  // row = (b·H + h)·Sq + i
    uint i = row % seq_q, h = (row / seq_q) % heads, b = row / seq_q / heads;
    uint first = row * chunks * (HEAD_DIM + 2u);
    float big_m = LOWEST;
    for (uint c = 0u; c < chunks; ++c) big_m = max(big_m, partial[first + c * (HEAD_DIM + 2u)]);
    float big_l = float(seq_k), value;
    if (big_m == LOWEST) {
      value = mean_value(b, h, d);
    } else {
      float sum = 0.0;
      big_l = 0.0;
      for (uint c = 0u; c < chunks; ++c) {
        uint at = first + c * (HEAD_DIM + 2u);
        float weight = exp(partial[at] - big_m);
        big_l += partial[at + 1u] * weight;
        sum += partial[at + 2u + d] * weight;
      }
      value = sum / big_l;
    }
    result[((b * seq_q + i) * heads + h) * HEAD_DIM + d] = value;
    if (write_stats && d == 0u) {
      stats[2u * row] = big_m;
      stats[2u * row + 1u] = big_l;
    }
  }
}
