#version 430
// In place, softmax over each row of x [rows, n]: one work group per row; the row's max and the sum of
// exp(x − max) are reduced in shared memory.
// (GLSL 4.30: barrier() orders execution only; memoryBarrierShared() before it publishes shared writes.)
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
uniform uint rows;
uniform uint n;
shared float partial[256];

// Tree reduction of every invocation's value (max when take_max, else sum); all get the result.
float reduce(float value, bool take_max) {
  uint lid = gl_LocalInvocationID.x;
  partial[lid] = value;
  memoryBarrierShared(); barrier();
  for (uint width = 128u; width > 0u; width >>= 1) {
    if (lid < width) {
      float other = partial[lid + width];
      partial[lid] = take_max ? max(partial[lid], other) : partial[lid] + other;
    }
    memoryBarrierShared(); barrier();
  }
  float result = partial[0];
  memoryBarrierShared(); barrier();  // partial is reused by the next reduction
  return result;
}

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;  // rows may exceed one grid axis
  if (row >= rows) return;  // the whole work group returns: barriers stay in uniform control flow
  uint base = row * n;
  uint lid = gl_LocalInvocationID.x;
  float row_max = -3.402823e38;
  for (uint j = lid; j < n; j += 256u) row_max = max(row_max, x[base + j]);
  row_max = reduce(row_max, true);
  float sum = 0.0;
  for (uint j = lid; j < n; j += 256u) sum += exp(x[base + j] - row_max);
  sum = reduce(sum, false);
  for (uint j = lid; j < n; j += 256u) x[base + j] = exp(x[base + j] - row_max) / sum;
}
