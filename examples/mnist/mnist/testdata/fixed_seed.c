// fixed_seed.c: an LD_PRELOAD library for upstream's mnist-train in
// TestUpstreamSameInitialWeights (upstream_test.go). mnist-train seeds the
// generator of its initial weights from std::random_device; this library
// defines the libstdc++ member that random_device's operator() calls,
// std::random_device::_M_getval(), so that it returns GOGGML_MNIST_SEED
// instead, and says so on stderr. Written for go-ggml.
#include <stdio.h>
#include <stdlib.h>

unsigned int _ZNSt13random_device9_M_getvalEv(void *self);

unsigned int _ZNSt13random_device9_M_getvalEv(void *self) {
	(void)self;
	const char *s = getenv("GOGGML_MNIST_SEED");
	unsigned int seed = s != NULL ? (unsigned int)strtoul(s, NULL, 10) : 0;
	fprintf(stderr, "fixed_seed: std::random_device gives %u\n", seed);
	return seed;
}
