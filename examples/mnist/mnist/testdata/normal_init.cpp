// normal_init.cpp: writes to stdout COUNT float32 values (little-endian)
// drawn as upstream's mnist-train draws its initial weights from its seed:
// one std::mt19937 seeded with SEED and one
// std::normal_distribution<float>(0, 0.01), in one stream over all the
// weights. TestUpstreamSameInitialWeights (upstream_test.go) builds it with the
// g++ and the -O3 of upstream's example build, so that libstdc++'s
// distribution gives the same floats. Written for go-ggml.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char **argv) {
	if (argc != 3) {
		std::fprintf(stderr, "usage: normal_init SEED COUNT > weights.f32\n");
		return 2;
	}
	std::mt19937 gen{(unsigned int)std::strtoul(argv[1], nullptr, 10)};
	std::normal_distribution<float> nd{0.0f, 1e-2f};
	const long n = std::strtol(argv[2], nullptr, 10);
	if (n <= 0) {
		std::fprintf(stderr, "normal_init: COUNT must be positive\n");
		return 2;
	}
	std::vector<float> v((size_t)n);
	for (float &x : v) {
		x = nd(gen);
	}
	return std::fwrite(v.data(), sizeof(float), v.size(), stdout) == v.size() ? 0 : 1;
}
