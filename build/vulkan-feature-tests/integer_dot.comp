#version 460
// go-ggml: probe whether glslc knows GL_EXT_integer_dot_product (ggml's CMake compiles this to decide).
#extension GL_EXT_integer_dot_product : require
void main() {}
