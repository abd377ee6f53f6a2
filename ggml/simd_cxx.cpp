//go:build cgo

// simd_cxx.cpp: reports the SIMD level that C++ code of this build is
// compiled for. cgo compiles every C++ file of a build with the same
// CGO_CXXFLAGS, so this is what ggml's C++ half (llamafile's sgemm, the
// repacked kernels) got; ggml_cpu_has_* reports only its C half. Written for
// go-ggml; it contains no ggml code.

extern "C" int goggml_cxx_has_simd(void) {
#if defined(__x86_64__) || defined(_M_X64)
#if defined(__AVX2__)
	return 1;
#else
	return 0;
#endif
#elif defined(__aarch64__)
#if defined(__ARM_NEON)
	return 1;
#else
	return 0;
#endif
#else
	return 1;
#endif
}
