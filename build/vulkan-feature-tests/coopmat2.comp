#version 460
// go-ggml: probe whether glslc knows GL_NV_cooperative_matrix2 (ggml's CMake compiles this to decide).
#extension GL_NV_cooperative_matrix2 : require
void main() {}
