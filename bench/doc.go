// Package bench measures what go-ggml costs over calling ggml from C: each
// figure is the same work done through the binding and through a C
// baseline compiled into the same test binary, so ratios come from one run
// on one machine. See README.md; run it with `make bench`.
//
// The C baselines live in this package's non-test files (test files cannot
// use cgo); they are for the benchmarks only.
package bench
