#version 430
// y[r, :] = (x[r, :] − mean) / sqrt(var + eps) · gamma + beta, biased variance (nn.LayerNorm): one work
// group per row; mean first, then the variance around it (two passes: no cancellation).
// (GLSL 4.30: barrier() orders execution only; memoryBarrierShared() before it publishes shared writes.)
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Gamma { float gamma[]; };
layout(std430, binding = 2) readonly buffer Beta { float beta[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
uniform uint rows;
uniform uint n;
uniform float eps;
shared float partial[256];

float reduce_sum(float value) {
  uint lid = gl_LocalInvocationID.x;
  partial[lid] = value;
  memoryBarrierShared(); barrier();
  for (uint width = 128u; width > 0u; width >>= 1) {
    if (lid < width) partial[lid] += partial[lid + width];
    memoryBarrierShared(); barrier();
  }
  float result = partial[0];
  memoryBarrierShared(); barrier();  // partial is reused by the next reduction
  return result;
}

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= rows) return;  // the whole work group returns: barriers stay in uniform control flow
  uint base = row * n;
  uint lid = gl_LocalInvocationID.x;
  float sum = 0.0;
  for (uint j = lid; j < n; j += 256u) sum += x[base + j];
  float mean = reduce_sum(sum) / float(n);
  float squares = 0.0;
  for (uint j = lid; j < n; j += 256u) {
    float centred = x[base + j] - mean;
    squares += centred * centred;
  }
  float inv_std = 1.0 / sqrt(reduce_sum(squares) / float(n) + eps);
  for (uint j = lid; j < n; j += 256u) y[base + j] = (x[base + j] - mean) * inv_std * gamma[j] + beta[j];
}
