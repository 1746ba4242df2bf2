#version 430
// In place: ReLU (kind 0) or the exact GELU x·Φ(x) = x/2·(1 + erf(x/√2)) (kind 1), as nn.GELU().
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
uniform uint size;
uniform uint kind;

// GLSL has no erf. Minimax approximation (N. Juffa's erff): at most ~1 ulp from erf in float arithmetic
// with an exact exp; GLSL's exp adds its own few ulp.
float erf_approx(float a) {
  float t = abs(a);
  float s = a * a;
  float r;
  if (t > 0.927734375) {
    r = fma(-1.72853470e-5, t, 3.83197126e-4);
    float u = fma(-3.88396438e-3, t, 2.42546219e-2);
    r = fma(r, s, u);
    r = fma(r, t, -1.06777877e-1);
    r = fma(r, t, -6.34846687e-1);
    r = fma(r, t, -1.28717512e-1);
    r = fma(r, t, -t);
    r = (1.0 - exp(r)) * sign(a);
  } else {
    r = -5.96761703e-4;
    r = fma(r, s, 4.99119423e-3);
    r = fma(r, s, -2.67681349e-2);
    r = fma(r, s, 1.12819925e-1);
    r = fma(r, s, -3.76125336e-1);
    r = fma(r, s, 1.28379166e-1);
    r = fma(r, a, a);
  }
  return r;
}

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < size; i += stride) {
    float v = x[i];
    x[i] = kind == 0u ? max(v, 0.0) : 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752));
  }
}
