#version 430
// out[i] = a[i] + b[i % period]: an element-wise add (period = size) or a bias added to every row
// (period = row length; a and out are then the same buffer).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Out { float result[]; };
uniform uint size;
uniform uint period;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;  // the grid may be smaller than size
  for (uint i = gl_GlobalInvocationID.x; i < size; i += stride) result[i] = a[i] + b[i % period];
}
