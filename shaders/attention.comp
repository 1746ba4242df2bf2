#version 430
// Fused attention, flash style, pass 1 of 2: softmax(q·kᵀ·scale, masked)·v without storing the scores.
// Each work group takes 64 queries of one (batch, head) and one chunk of the keys, one query per
// invocation, and streams the chunk's keys through shared memory in tiles of KEY_TILE, keeping a running
// max m, sum l and weighted sum of values acc (online softmax: one rescale per tile). It writes
// (m, l, acc) per query and chunk to `partial`; attention_combine.comp merges the chunks. Chunks bound
// each invocation's loop iterations (Mesa's llvmpipe silently ends an invocation after 65535); on a
// hardware renderer the host makes the whole key range one chunk. The host defines HEAD_DIM, KEY_TILE.
// Layouts: q [B, Sq, H, D]; k, v [B, Sk, H, D]; keep [B, Sk] (1 = attend); partial [B, H, Sq, chunks, D + 2].
// A masked key's score is LOWEST, so that it adds exp(LOWEST − m) = 0 once any key is kept, and a row with
// no kept key keeps m = LOWEST, which the combine pass turns into the tutorial's −1e9 result (uniform
// weights). Under the causal mask, keys after the block's last query are skipped: masked for every query.
// (GLSL 4.30: barrier() orders execution only; memoryBarrierShared() before it publishes shared writes.)
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) readonly buffer Keep { float keep[]; };
layout(std430, binding = 4) writeonly buffer Partial { float partial[]; };
uniform uint batch;
uniform uint heads;
uniform uint seq_q;
uniform uint seq_k;
uniform float scale;
uniform bool has_keep;
uniform bool causal;
uniform uint chunk_keys;
uniform uint chunks;
const float LOWEST = -3.402823e38;
shared float k_tile[KEY_TILE][HEAD_DIM];
shared float v_tile[KEY_TILE][HEAD_DIM];
shared bool keep_tile[KEY_TILE];

void load_tile(uint b, uint h, uint k0) {
  for (uint e = gl_LocalInvocationID.x; e < KEY_TILE * HEAD_DIM; e += 64u) {
    uint j = e / HEAD_DIM, d = e % HEAD_DIM;
    bool inside = k0 + j < seq_k;
    uint at = ((b * seq_k + k0 + j) * heads + h) * HEAD_DIM + d;
    k_tile[j][d] = inside ? k[at] : 0.0;
    v_tile[j][d] = inside ? v[at] : 0.0;
  }
  for (uint j = gl_LocalInvocationID.x; j < KEY_TILE; j += 64u)
    keep_tile[j] = !has_keep || (k0 + j < seq_k && keep[b * seq_k + k0 + j] != 0.0);
}

// Folds keys k0 … k0 + len − 1 of the staged tile into query i's running max m, sum l and weighted
// values acc.
void consume_tile(uint i, uint k0, uint len, in float qv[HEAD_DIM], inout float acc[HEAD_DIM], inout float m,
                  inout float l) {
  float s[KEY_TILE];
  float tile_max = LOWEST;
  for (uint j = 0u; j < len; ++j) {
    float dot_qk = 0.0;
    for (uint d = 0u; d < HEAD_DIM; ++d) dot_qk = fma(qv[d], k_tile[j][d], dot_qk);
    bool kept = keep_tile[j] && !(causal && k0 + j > i);
    s[j] = kept ? dot_qk * scale : LOWEST;
    tile_max = max(tile_max, s[j]);
  }
  float m_new = max(m, tile_max);
  float correction = exp(m - m_new);
  l *= correction;
  for (uint d = 0u; d < HEAD_DIM; ++d) acc[d] *= correction;
  for (uint j = 0u; j < len; ++j) {
    float p = exp(s[j] - m_new);
    l += p;
    for (uint d = 0u; d < HEAD_DIM; ++d) acc[d] = fma(p, v_tile[j][d], acc[d]);
  }
  m = m_new;
}

void main() {
  uint q_blocks = (seq_q + 63u) / 64u;
  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (group >= batch * heads * q_blocks * chunks) return;  // the whole work group: barriers stay uniform
  uint chunk = group % chunks, block = group / chunks;
  uint q0 = (block % q_blocks) * 64u, h = (block / q_blocks) % heads, b = block / q_blocks / heads;
  uint i = q0 + gl_LocalInvocationID.x;
  bool in_range = i < seq_q;  // invocations past the last query still help stage the tiles
  float qv[HEAD_DIM], acc[HEAD_DIM];
  for (uint d = 0u; d < HEAD_DIM; ++d) {
    qv[d] = in_range ? q[((b * seq_q + i) * heads + h) * HEAD_DIM + d] : 0.0;
    acc[d] = 0.0;
  }
  float m = LOWEST, l = 0.0;
  uint key_end = min(seq_k, (chunk + 1u) * chunk_keys);
  if (causal) key_end = min(key_end, q0 + 64u);
  for (uint k0 = chunk * chunk_keys; k0 < key_end; k0 += KEY_TILE) {
    memoryBarrierShared(); barrier();  // the previous tile is consumed
    load_tile(b, h, k0);
    memoryBarrierShared(); barrier();
    if (in_range) consume_tile(i, k0, min(KEY_TILE, key_end - k0), qv, acc, m, l);
  }
  if (!in_range) return;
  uint at = (((b * heads + h) * seq_q + i) * chunks + chunk) * (HEAD_DIM + 2u);
  partial[at] = m;
  partial[at + 1u] = l;
  for (uint d = 0u; d < HEAD_DIM; ++d) partial[at + 2u + d] = acc[d];
}
