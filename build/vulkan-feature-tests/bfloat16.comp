#version 460
// go-ggml: probe whether glslc knows GL_EXT_bfloat16 (ggml's CMake compiles this to decide).
#extension GL_EXT_bfloat16 : require
void main() {}
