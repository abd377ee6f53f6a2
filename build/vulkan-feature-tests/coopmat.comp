#version 460
// go-ggml: probe whether glslc knows GL_KHR_cooperative_matrix (ggml's CMake compiles this to decide).
#extension GL_KHR_cooperative_matrix : require
void main() {}
