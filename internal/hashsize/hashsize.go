// Package hashsize is ggml_hash_size in Go, for the packages that compute
// what ggml will allocate before asking it.
package hashsize

// primes are ggml_hash_size's table: the next prime after each power of two.
var primes = [...]uint64{
	2, 3, 5, 11, 17, 37, 67, 131, 257, 521, 1031,
	2053, 4099, 8209, 16411, 32771, 65537, 131101,
	262147, 524309, 1048583, 2097169, 4194319, 8388617,
	16777259, 33554467, 67108879, 134217757, 268435459,
	536870923, 1073741827, 2147483659,
}

// Of returns the slots of a ggml hash set for n tensors (ggml_hash_size):
// the smallest prime of ggml's table that is at least n, else n|1.
func Of(n uint64) uint64 {
	for _, p := range primes {
		if p >= n {
			return p
		}
	}
	return n | 1
}

// Primes returns ggml's table, for tests.
func Primes() []uint64 { return primes[:] }
