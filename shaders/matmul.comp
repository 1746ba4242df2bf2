#version 430
// c[m, n] = a[m, k] · b[k, n], or · b[n, k]ᵀ when the host defines B_TRANSPOSED. Each work group
// computes a 64×64 tile of c; k advances 16 at a time through shared memory, where both operands are
// stored k-major so the inner loop reads a row of a and a column of b as contiguous runs. Each of the
// 16×16 invocations owns 4×4 outputs strided by 16 (rows ty + 16i, columns tx + 16j), so neighbouring
// invocations read neighbouring words. Out-of-range elements load as 0 and are never stored.
// (GLSL 4.30: barrier() orders execution only; memoryBarrierShared() before it publishes shared writes.)
layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
uniform uint m;
uniform uint n;
uniform uint k;
const uint TILE = 64u;
const uint STEP = 16u;
shared float a_tile[STEP][TILE];
shared float b_tile[STEP][TILE];

void load_tiles(uint row0, uint col0, uint k0, uint tid) {
  for (uint step = 0u; step < STEP * TILE / 256u; ++step) {  // a constant count: unrolled
    uint e = tid + 256u * step;
    uint r = e / STEP, kk = e % STEP;  // consecutive invocations read consecutive k of one row of a
    a_tile[kk][r] = (row0 + r < m && k0 + kk < k) ? a[(row0 + r) * k + k0 + kk] : 0.0;
#ifdef B_TRANSPOSED
    uint col = e / STEP, bk = e % STEP;  // b[n, k]: k is contiguous
    b_tile[bk][col] = (col0 + col < n && k0 + bk < k) ? b[(col0 + col) * k + k0 + bk] : 0.0;
#else
    uint bk = e / TILE, col = e % TILE;  // b[k, n]: columns are contiguous
    b_tile[bk][col] = (col0 + col < n && k0 + bk < k) ? b[(k0 + bk) * n + col0 + col] : 0.0;
#endif
  }
}

void main() {
  uint row0 = gl_WorkGroupID.y * TILE, col0 = gl_WorkGroupID.x * TILE;
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  float acc[4][4];
  for (uint i = 0u; i < 4u; ++i)
    for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  for (uint k0 = 0u; k0 < k; k0 += STEP) {
    load_tiles(row0, col0, k0, ty * 16u + tx);
    memoryBarrierShared(); barrier();
    for (uint kk = 0u; kk < STEP; ++kk) {
      float av[4], bv[4];
      for (uint i = 0u; i < 4u; ++i) av[i] = a_tile[kk][ty + 16u * i];
      for (uint j = 0u; j < 4u; ++j) bv[j] = b_tile[kk][tx + 16u * j];
      for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    memoryBarrierShared(); barrier();  // the tiles are overwritten by the next step
  }
  for (uint i = 0u; i < 4u; ++i) {
    uint row = row0 + ty + 16u * i;
    for (uint j = 0u; j < 4u; ++j) {
      uint col = col0 + tx + 16u * j;
      if (row < m && col < n) c[row * n + col] = acc[i][j];
    }
  }
}
